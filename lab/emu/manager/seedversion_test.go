package manager

import (
	"bytes"
	"strings"
	"testing"
)

// TestSeedVersion: siem-managerd --reseed --seed-only --seed-version gives the whole seeded fleet one
// version (the agents that never connected report none, 000 keeps the manager's), and refuses a
// value that is not a version.
func TestSeedVersion(t *testing.T) {
	h := newHome(t, 5)
	var stderr bytes.Buffer
	env := func(string) string { return "" }
	if code := DaemonMain(t.Context(), []string{"--home", h.Dir, "--seed-agents", "30", "--reseed", "--seed-only", "--seed-version", "4.8.2"}, &stderr, env); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	agents, err := NewAgentStore(h).Agents()
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]int{}
	for _, a := range agents {
		if a.ID != 0 {
			versions[a.Version]++
		}
	}
	if len(agents) != 31 || versions["Wazuh v4.8.2"] != 26 || versions[""] != 4 || len(versions) != 2 {
		t.Errorf("%d agents, versions %v: want 30 agents, 26 at 4.8.2 and 4 never connected", len(agents), versions)
	}
	stderr.Reset()
	if code := DaemonMain(t.Context(), []string{"--home", h.Dir, "--seed-agents", "30", "--reseed", "--seed-only", "--seed-version", "latest"}, &stderr, env); code != 2 || !strings.Contains(stderr.String(), "want a version like 4.8.2") {
		t.Errorf("--seed-version latest: exit %d: %s", code, stderr.String())
	}
}
