//go:build e2e

package rules_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2ERulesLab: the lab's rules pass; a bad local rule is reported with
// file and line; a broken manager config is reported by the manager check.
func TestE2ERulesLab(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 350})
	cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(l.Dir, "siemctl.yaml"), ExplicitPath: true, LookupEnv: os.LookupEnv})
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(cfg.Manager.InstallDir, "etc")

	r := l.Siemctl("rules", "check", "-o", "json")
	var rep struct {
		OK      bool `json:"ok"`
		Rules   int  `json:"rules"`
		Manager struct {
			State string `json:"state"`
		} `json:"manager"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || !rep.OK || rep.Manager.State != "ok" {
		t.Fatalf("fresh lab: exit %d %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}

	bad := filepath.Join(etc, "rules", "zz_siemctl_e2e.xml")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	// A '|' inside parentheses stops analysisd (5107): an error with its line.
	if err := os.WriteFile(bad, []byte("<group name=\"e2e,\">\n  <rule id=\"100900\" level=\"5\">\n    <if_sid>5716</if_sid>\n    <regex>port (22|2222)</regex>\n    <description>e2e</description>\n  </rule>\n</group>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = l.Siemctl("rules", "check")
	os.Remove(bad)
	if r.Code != 3 || !strings.Contains(r.Stdout, "rules/zz_siemctl_e2e.xml\t4\terror\t5107\trule 100900: <regex> (osregex) syntax error: '|' inside parentheses") {
		t.Errorf("bad rule: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "decoders"), 0o755)
	os.WriteFile(filepath.Join(dir, "decoders", "d.xml"), []byte("<decoder name=\"x\">\n<regex>(\\S+)</regex>\n<order>a, b</order>\n</decoder>\n"), 0o644)
	r = l.Siemctl("rules", "check", "--dir", dir)
	if r.Code != 3 || !strings.Contains(r.Stdout, "decoders/d.xml\t1\terror\t2108\t") || strings.Contains(r.Stdout, "manager") {
		t.Errorf("--dir: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	l.MustSiemlab("fault", "manager-config-broken")
	r = l.Siemctl("rules", "check")
	if r.Code != 3 || !strings.Contains(r.Stdout, "manager (") {
		t.Errorf("broken manager config: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	l.MustSiemlab("heal", "manager-config-broken")
	if r = l.Siemctl("rules", "check"); r.Code != 0 {
		t.Errorf("after heal: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
