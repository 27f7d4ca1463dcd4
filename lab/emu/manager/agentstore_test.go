package manager

import (
	"testing"
)

// TestAgentStoreCache: the store keeps what it read or wrote, but a change another writer made to
// the file (the tools, another daemon) is what the next read and update see, and an update never
// changes the agents an earlier read handed out.
func TestAgentStoreCache(t *testing.T) {
	h := newHome(t, 3)
	a, b := NewAgentStore(h), NewAgentStore(h)
	before, err := a.Agents()
	if err != nil {
		t.Fatal(err)
	}
	rename := func(s *AgentStore, name string) {
		t.Helper()
		if err := s.Update(func(ag []*Agent) ([]*Agent, bool, error) {
			ag[1].Name, ag[1].OS.Platform = name, name
			ag[1].Group[0] = name
			return ag, true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	rename(a, "first")
	if before[1].Name != "web-01" || before[1].OS.Platform != "ubuntu" || before[1].Group[0] != "default" {
		t.Errorf("an update changed the agents an earlier read returned: %+v %+v", before[1], before[1].OS)
	}
	rename(b, "second") // b read the file a wrote
	for _, s := range []*AgentStore{a, b} {
		got, err := s.Agents()
		if err != nil || got[1].Name != "second" || got[1].OS.Platform != "second" {
			t.Fatalf("after the other store's update: %+v %v", got[1], err)
		}
	}
	// a's update starts from b's write, not from its own cache.
	if err := a.Update(func(ag []*Agent) ([]*Agent, bool, error) {
		if ag[1].Name != "second" {
			t.Errorf("update saw %q, want the other store's write", ag[1].Name)
		}
		return ag, false, nil
	}); err != nil {
		t.Fatal(err)
	}
}
