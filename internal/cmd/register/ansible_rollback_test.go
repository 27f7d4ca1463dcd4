package register_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// stoppedRoll writes the fake's record of a roll stopped at the manager master: the indexer nodes
// done, manager/m1 failed.
func stoppedRoll(t *testing.T, dir string) {
	t.Helper()
	type entry struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	var order []entry
	for _, n := range []string{"indexer/i2", "indexer/i3", "indexer/i1"} {
		order = append(order, entry{n, "done"})
	}
	order = append(order, entry{"manager/m1", "failed"}, entry{"manager/m2", "pending"}, entry{"dashboard/d1", "pending"})
	b, _ := json.Marshal(map[string]any{"target": "4.10.0", "phase": "failed", "order": order})
	if err := os.WriteFile(filepath.Join(dir, "record.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeRecord is the fake's record now.
func fakeRecord(t *testing.T, dir string) (phase string, states map[string]string) {
	t.Helper()
	var r struct {
		Phase string `json:"phase"`
		Order []struct{ Name, State string }
	}
	b, err := os.ReadFile(filepath.Join(dir, "record.json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatal(err)
	}
	states = map[string]string{}
	for _, e := range r.Order {
		states[e.Name] = e.State
	}
	return r.Phase, states
}

// waves checks that every call starting with one of a wave's prefixes comes after every call of
// the waves before it, and that each wave's calls are exactly want (in any order: the hosts of a
// wave run at once).
func waves(t *testing.T, calls []string, want ...[]string) {
	t.Helper()
	pos := 0
	for _, w := range want {
		got := slices.Clone(calls[pos:min(pos+len(w), len(calls))])
		slices.Sort(got)
		ws := slices.Clone(w)
		slices.Sort(ws)
		if !slices.Equal(got, ws) {
			t.Errorf("calls %d..%d: %v, want %v (in any order)\nall calls:\n%s", pos, pos+len(w), got, ws, strings.Join(calls, "\n"))
			return
		}
		pos += len(w)
	}
	if pos != len(calls) {
		t.Errorf("more calls than wanted: %v", calls[pos:])
	}
}

// TestRollbackPlaybook: rollback.yml on a stopped roll: prepare on the first indexer host (the
// one that ran upgrade apply --cluster) before every other host, every indexer host down at once,
// then up at once (the cluster is formed afresh: no serial), the restore once, then the manager
// and dashboard turns one at a time in the record's order, the finish once. A phase that fails on
// one host stops everything; run again, the playbook skips what each host has done and resumes.
func TestRollbackPlaybook(t *testing.T) {
	dir := t.TempDir()
	stoppedRoll(t, dir)
	calls, out, err := playbookRunIn(t, dir, "rollback.yml", "FAKE_RB_FAIL=i2:indexer-up")
	if err == nil {
		t.Fatalf("ansible-playbook succeeded with a failed phase:\n%s", out)
	}
	// the first wave of indexer-up is cut short on i2 (the other nodes may have started)
	var head []string
	for _, c := range calls {
		if !strings.HasPrefix(c, "rb-indexer-up ") {
			head = append(head, c)
		}
	}
	waves(t, head,
		[]string{"rb-prepare i1"},
		[]string{"rb-prepare i2", "rb-prepare i3", "rb-prepare m1", "rb-prepare m2", "rb-prepare d1"},
		[]string{"rb-indexer-down i1", "rb-indexer-down i2", "rb-indexer-down i3"},
		[]string{"rb-fail i2 indexer-up"})
	if phase, _ := fakeRecord(t, dir); phase != "rolling-back" {
		t.Errorf("after the failure the record is %s, want rolling-back", phase)
	}

	calls, out, err = playbookRunIn(t, dir, "rollback.yml")
	if err != nil {
		t.Fatalf("ansible-playbook run again: %v\n%s", err, out)
	}
	var up []string
	for _, h := range []string{"i1", "i2", "i3"} {
		if slices.Contains(calls, "rb-indexer-up "+h) {
			up = append(up, "rb-indexer-up "+h)
		}
	}
	if !slices.Contains(up, "rb-indexer-up i2") {
		t.Errorf("run again, the failed phase was not resumed on i2: %v", calls)
	}
	waves(t, calls, up, []string{"rb-restore i1"}, []string{"rb-node manager/m1 m1"}, []string{"rb-node manager/m2 m2"},
		[]string{"rb-node dashboard/d1 d1"}, []string{"rb-finish i1"})
	phase, states := fakeRecord(t, dir)
	if phase != "rolled-back" {
		t.Errorf("the record ends %s, want rolled-back", phase)
	}
	for n, st := range states {
		if st != "done" {
			t.Errorf("%s is %s at the end", n, st)
		}
	}
}

// TestUpgradePlaybookRollsBackOnNoGo: a node whose upgrade ends in a no-go past the point of no
// return (upgrade node exit 10, the record rolling-back) stops the roll there and upgrade.yml rolls
// the whole deployment back through rollback.yml, without a second command: no later upgrade turn,
// no finish, every rollback phase, the record rolled-back; the playbook fails saying so.
func TestUpgradePlaybookRollsBackOnNoGo(t *testing.T) {
	dir := t.TempDir()
	calls, out, err := playbookRunIn(t, dir, "upgrade.yml", "FAKE_NOGO=i3")
	if err == nil {
		t.Fatalf("ansible-playbook succeeded although the roll was rolled back:\n%s", out)
	}
	for _, want := range []string{"indexer/i3: no-go", "master not discovered", "rolled the whole deployment back"} {
		if !strings.Contains(out, want) {
			t.Errorf("the play does not show %q (the node, its log's last error, the rollback):\n%s", want, out)
		}
	}
	waves(t, calls,
		[]string{"apply i1 4.10.0"}, []string{"node i2 indexer/i2"}, []string{"nogo i3 indexer/i3"},
		[]string{"rb-prepare i1"},
		[]string{"rb-prepare i2", "rb-prepare i3", "rb-prepare m1", "rb-prepare m2", "rb-prepare d1"},
		[]string{"rb-indexer-down i1", "rb-indexer-down i2", "rb-indexer-down i3"},
		[]string{"rb-indexer-up i1", "rb-indexer-up i2", "rb-indexer-up i3"},
		[]string{"rb-restore i1"}, []string{"rb-node manager/m1 m1"}, []string{"rb-node manager/m2 m2"},
		[]string{"rb-node dashboard/d1 d1"}, []string{"rb-finish i1"})
	if phase, _ := fakeRecord(t, dir); phase != "rolled-back" {
		t.Errorf("the record ends %s, want rolled-back", phase)
	}
}
