//go:build e2e

package upgrade_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// rollbackPortOffset: the rolling rollback's distributed lab (the port shift separates it from
// the rolling upgrade's lab at the same offset).
const rollbackPortOffset = 0

// TestE2ERollingRollback: the cross-codec case, the one test kept on the lab's own 4.9.0 → 4.10.0
// builds (OpenSearch 2.11.1 → 2.19.3, not the Wazuh releases of those numbers): 2.11.1 cannot read
// the segments 2.19 writes, so a node once upgraded cannot simply start on the old version again
// and the rollback must restore the snapshot into nodes formed afresh. TestE2ERollingUpgrade runs
// the real pair (4.14.1 → 4.14.4). A fresh distributed lab rolled from 4.9.0 to 4.10.0 through
// ansible/upgrade.yml with the indexer-no-rejoin fault armed on the second indexer node of the
// order: once upgraded, that node starts but cannot join. Its `upgrade node` stops at the rejoin
// gate's deadline, naming the node and its log's last error, and moves the run to rolling-back
// (exit 10); the playbook then rolls the whole deployment back through rollback.yml. At the end
// every package is at 4.9.0 on every host, health is OK on every host, the record is rolled-back,
// every event that was in the snapshot is back and none is there twice. The flow runs throughout:
// the events of tag "before" were all searchable before the roll (so in its snapshot); tag
// "during" runs through the roll and the rollback: those written after the snapshot are sent again
// by the managers' shippers, rewound in their rollback turns, each once.
func TestE2ERollingRollback(t *testing.T) {
	l := e2e.Up(t, e2e.Options{Topology: lab.TopologyDistributed, PortOffset: rollbackPortOffset})
	const to, oldVersion = "4.10.0", "4.9.0-1"
	on := func(host string) *e2e.Lab { return l.OnHost(t, host) }
	flow := func(tag string) (stop func(), out *strings.Builder) {
		out = &strings.Builder{}
		return l.SiemlabBackground(out, out, "flow", "send", "--tag", tag, "--rate", "5"), out
	}
	check := func(t *testing.T, tag, wait string) lab.FlowReport {
		t.Helper()
		r := l.Siemlab("flow", "check", "--tag", tag, "--wait", wait, "--json")
		var rep lab.FlowReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("flow check %s: exit %d (%v)\n%s%s", tag, r.Code, err, r.Stdout, r.Stderr)
		}
		return rep
	}

	// Events searchable before the roll: in the snapshot upgrade apply --cluster takes.
	stopBefore, _ := flow("before")
	time.Sleep(10 * time.Second)
	stopBefore()
	before := check(t, "before", "2m")
	if before.Lost != 0 || before.Written == 0 || before.Duplicates != 0 {
		t.Fatalf("before the roll: %s", before)
	}
	stopDuring, duringOut := flow("during")

	if r := on("indexer-1").Siemctl("indexer", "repository", "prepare", "--yes"); r.Code != 0 { // path.repo, shared by every node
		t.Fatalf("indexer repository prepare: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	order := rollOrder(t, on("indexer-1"))
	faulty := order[1] // the second indexer node of the roll: the first one is already upgraded
	l.MustSiemlab("fault", "indexer-no-rejoin:"+faulty)
	t.Logf("order %s; %s will not rejoin once upgraded", strings.Join(order, ", "), faulty)

	start := time.Now()
	pb := playbook(t, l.Dir, to)
	cmd := pb.start(t)
	err := cmd.Wait()
	out := pb.out.String()
	t.Logf("upgrade.yml (rolled back) in %s:\n%s", time.Since(start).Round(time.Second), tail(out, 6000))
	if i := strings.Index(out, "TASK [the no-go"); i >= 0 {
		t.Logf("the no-go as the play shows it:\n%s", out[i:min(len(out), i+2500)])
	}
	if err == nil || !strings.Contains(out, "rolled the whole deployment back") {
		t.Fatalf("upgrade.yml: %v, want the play to fail saying the deployment was rolled back", err)
	}
	// the node's no-go, shown by the play: the node, the gate, its log's last error
	for _, want := range []string{"indexer/" + faulty + ": no-go", "indexer/rejoined", lab.NoRejoinClusterName} {
		if !strings.Contains(out, want) {
			t.Errorf("the play does not show %q", want)
		}
	}
	for _, task := range []string{"rollback --cluster --phase indexer-down", "rollback --cluster --phase restore", "rollback --cluster --phase finish"} {
		if !strings.Contains(out, task) {
			t.Errorf("the playbook did not run %q", task)
		}
	}

	t.Run("the record names the node and its log's last error, and ends rolled-back", func(t *testing.T) {
		r := on("manager-1").Siemctl("upgrade", "status", "--cluster", "-o", "json")
		var st struct {
			Record struct {
				Phase    string `json:"phase"`
				Rollback struct {
					Cause string `json:"cause"`
					Entry string `json:"entry"`
				} `json:"rollback"`
				Order []struct{ Name, State string } `json:"order"`
			} `json:"record"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
			t.Fatalf("upgrade status --cluster: exit %d (%v)\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}
		rec := st.Record
		t.Logf("record: phase %s, rollback cause %q (entry %q)", rec.Phase, rec.Rollback.Cause, rec.Rollback.Entry)
		if rec.Phase != "rolled-back" {
			t.Errorf("phase %s, want rolled-back", rec.Phase)
		}
		if rec.Rollback.Cause == "" {
			t.Errorf("rollback %+v: no cause", rec.Rollback)
		}
		for _, e := range rec.Order {
			if e.State != "done" {
				t.Errorf("entry %s is %s after the rollback", e.Name, e.State)
			}
		}
	})

	t.Run("every host at the old version, health OK everywhere", func(t *testing.T) {
		everyHostAt(t, l, oldVersion)
	})

	t.Run("every event of the snapshot back, none twice", func(t *testing.T) {
		stopDuring()
		after := check(t, "before", "2m")
		if after.Lost != 0 || after.Duplicates != 0 || after.Indexed != before.Indexed {
			t.Errorf("after the rollback: %s; before the roll: %s", after, before)
		}
		// those written after the snapshot are sent again by each manager's shipper, rewound to the
		// run's start in its rollback turn (shipper/rewind): none lost, none twice
		during := check(t, "during", "3m")
		if during.Lost != 0 || during.Duplicates != 0 || during.Written == 0 {
			t.Errorf("events of the roll and rollback: %s (lost for example %v)\nflow send: %s", during, during.LostSample, duringOut.String())
		}
		t.Logf("%s; %s", after, during)
	})

	l.MustSiemlab("heal", "indexer-no-rejoin:"+faulty)
}
