package main

import (
	"os/exec"
	"strings"
	"testing"
)

// siemctl carries one YAML library, the maintained go.yaml.in/yaml/v3 (viper uses it too): a
// second one (gopkg.in/yaml.v3, yaml.v2, sigs.k8s.io/yaml) coming in through a new import fails.
func TestOneYAMLLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var yamls []string
	seen := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		if strings.Contains(strings.ToLower(m), "yaml") && !seen[m] {
			seen[m] = true
			yamls = append(yamls, m)
		}
	}
	if len(yamls) != 1 || yamls[0] != "go.yaml.in/yaml/v3" {
		t.Fatalf("YAML modules in siemctl: %v, want only go.yaml.in/yaml/v3", yamls)
	}
}
