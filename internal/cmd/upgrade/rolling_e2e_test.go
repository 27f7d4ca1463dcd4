//go:build e2e

package upgrade_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/testenv"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// labSecret reads a lab secret (the indexer's admin password) from the lab's directory.
func labSecret(t *testing.T, dir, name string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "hosts", "*", "secrets", name))
	paths = append([]string{filepath.Join(dir, "secrets", name)}, paths...)
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	t.Fatalf("no secret %s under %s", name, dir)
	return ""
}

// rollPortOffset: the rolling upgrade's distributed lab (distributed ports are the single lab's +
// 20000, so only another distributed lab at the same offset could collide: lab/cmd/siemlab's use
// 0 and 500).
const rollPortOffset = 0

// rollFrom and rollTo are the rolling upgrade's pair: real Wazuh releases, OpenSearch 2.19.3 →
// 2.19.4 (lab.Releases).
const rollFrom, rollTo = "4.14.1", "4.14.4"

// TestE2ERollingUpgrade: a fresh distributed lab (three indexer nodes, a manager master and worker
// with their Filebeat, a dashboard) rolled from Wazuh 4.14.1 (OpenSearch 2.19.3) to 4.14.4 (2.19.4),
// the upgrade sites face, and back, each host through its own
// env (its siemctl.yaml, dpkg root and apt repository), while `siemlab flow send` writes events
// throughout, in the four states a roll is rolled back from or walked through:
//  1. the manual's path (docs/distributed.md, "Ansible as the fleet driver") on the fresh lab with
//     nothing done beforehand: `indexer repository prepare`, `upgrade plan --cluster` (GO), then
//     ansible/upgrade.yml; every host at the target, health OK, every event searchable exactly
//     once, every search answered;
//  2. ansible/rollback.yml after that completed roll (after `finish`): every host at the old
//     version, every alert of the roll's and the rollback's windows indexed again exactly once;
//  3. a rollback after the first turn: `upgrade apply --cluster`, the first host's `upgrade node`,
//     then ansible/rollback.yml;
//  4. a roll with what operators meet: the election moved after the first indexer turn (followed
//     with no operator action), siemctl killed on the worker mid-turn, the worker refused with 3031
//     until the printed fix is followed on the master; the roll finishes.
func TestE2ERollingUpgrade(t *testing.T) {
	l := e2e.Up(t, e2e.Options{Topology: lab.TopologyDistributed, PortOffset: rollPortOffset, Version: rollFrom})
	const to, pkgVersion, oldVersion = rollTo, rollTo + "-1", rollFrom + "-1"
	on := func(host string) *e2e.Lab { return l.OnHost(t, host) }
	must := func(t *testing.T, host string, args ...string) e2e.Result {
		t.Helper()
		r := on(host).Siemctl(args...)
		if r.Code != 0 {
			t.Fatalf("%s: siemctl %s: exit %d\n%s\n%s", host, strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
		}
		return r
	}
	// flowClean checks that every event sent with tag was indexed exactly once.
	flowClean := func(t *testing.T, tag string) lab.FlowReport {
		t.Helper()
		r := l.Siemlab("flow", "check", "--tag", tag, "--wait", "3m", "--json")
		var rep lab.FlowReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("flow check %s: exit %d (%v)\n%s%s", tag, r.Code, err, r.Stdout, r.Stderr)
		}
		if r.Code != 0 || rep.Lost != 0 || rep.Duplicates != 0 || rep.Stray != 0 || rep.Written == 0 {
			t.Errorf("flow %s: exit %d, %s (lost for example %v)", tag, r.Code, rep, rep.LostSample)
		}
		t.Logf("flow %s: %s", tag, rep)
		return rep
	}

	// 1. The manual's path on a fresh lab. The flow and the search probe run throughout the roll.
	var sendOut strings.Builder
	stopSend := l.SiemlabBackground(&sendOut, &sendOut, "flow", "send", "--tag", "roll", "--rate", "5")
	var probeOut, probeErr strings.Builder
	stopProbe := l.SiemlabBackground(&probeOut, &probeErr, "flow", "probe", "--every", "1s", "--json")

	// The snapshot repository lives in the directory every node shares (path.repo).
	must(t, "indexer-1", "indexer", "repository", "prepare", "--yes")
	// The lab's alert indices have Wazuh's template settings (auto_expand_replicas "0-1"): on three
	// nodes each has a replica, so the plan has no no-replica warning and the roll keeps them as they
	// are (no replica setting changes).
	t.Run("plan: GO, every alert index has its replica from the template", func(t *testing.T) {
		r := on("indexer-1").Siemctl("upgrade", "plan", "--cluster", "--to", to)
		if out := r.Stdout + r.Stderr; r.Code != 0 || strings.Contains(out, "have no replica") {
			t.Fatalf("plan --cluster: exit %d, want GO without the no-replica warning:\n%s", r.Code, out)
		}
	})
	start := time.Now()
	if !t.Run("ansible: upgrade.yml, the manual's path", func(t *testing.T) {
		pb := playbook(t, l.Dir, to)
		if err := pb.start(t).Wait(); err != nil {
			t.Fatalf("upgrade.yml on a fresh lab: %v\n%s", err, tail(pb.out.String(), 8000))
		}
	}) {
		t.FailNow()
	}
	st := clusterStatus(t, on("manager-1"))
	took := map[string]time.Duration{}
	var order []string
	for _, e := range st.Record.Order {
		if e.State != rollout.Done {
			t.Errorf("entry %s is %s after the roll", e.Name, e.State)
		}
		took[e.Name] = e.Finished.Sub(e.Started)
		order = append(order, e.Name)
	}
	if st.Record.Phase != rollout.PhaseDone {
		t.Errorf("the run is in phase %s after the playbook's finish, want done", st.Record.Phase)
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s %s", k, took[k].Round(100*time.Millisecond)))
	}
	rollWall := time.Since(start)
	t.Logf("roll wall time %s: %s", rollWall.Round(100*time.Millisecond), strings.Join(parts, ", "))

	// Each indexer turn ended only when the replicas were back: its node run's last gate
	// (indexer/health) passed on a green cluster, or on a yellow one only because replicas wait for
	// newer nodes (node_version) while older nodes remained, never earlier.
	t.Run("each indexer turn ended with its replicas back", func(t *testing.T) {
		for _, e := range st.Record.Order {
			if !strings.HasPrefix(e.Name, "indexer/") {
				continue
			}
			note := turnEnd(t, l, rollout.Node(e.Name), e.Started)
			if !strings.HasPrefix(note, "cluster green") && !strings.HasPrefix(note, "cluster yellow only because of the node_version decider") {
				t.Errorf("%s's turn ended on %q, want green or yellow only because of node_version", e.Name, note)
			}
			t.Logf("%s: turn %s, ended on: %s", e.Name, took[e.Name].Round(100*time.Millisecond), note)
		}
	})

	t.Run("one report for the whole roll (finish --cluster on indexer-1)", func(t *testing.T) {
		r := must(t, "indexer-1", "upgrade", "status", "-o", "json")
		var rep struct {
			Runbook string           `json:"runbook"`
			Roll    *rollout.Summary `json:"roll"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Roll == nil {
			t.Fatalf("indexer-1's last run (%q) has no roll summary (%v):\n%s", rep.Runbook, err, r.Stdout)
		}
		sum := rep.Roll
		if len(sum.Entries) != len(st.Record.Order) || sum.Totals.States[rollout.Done] != len(st.Record.Order) || sum.Phase != rollout.PhaseDone || sum.Target != to {
			t.Errorf("roll summary %s, want every one of the %d entries done, phase done, target %s", sum.Line(), len(st.Record.Order), to)
		}
		for i, e := range sum.Entries {
			if e.Name != st.Record.Order[i].Name || e.Host == "" || e.Started.IsZero() || e.Duration <= 0 || e.State != rollout.Done {
				t.Errorf("roll summary entry %d: %+v, want %s with its host, start and duration, done", i, e, st.Record.Order[i].Name)
			}
		}
		if sum.Totals.Turns <= 0 || sum.Totals.Wall < sum.Totals.Turns {
			t.Errorf("roll totals %+v: want the turns one after another within the wall time", sum.Totals)
		}
		page := must(t, "indexer-1", "upgrade", "report", "--html", "-")
		if !strings.Contains(page.Stdout, "<h2>The roll</h2>") || !strings.Contains(page.Stdout, sum.Line()) {
			t.Errorf("the HTML report lacks the roll (%s)", sum.Line())
		}
		t.Logf("report: %s", sum.Line())
	})

	var probe lab.SearchProbeResult
	t.Run("searches answered throughout the roll", func(t *testing.T) {
		stopProbe()
		res := &probe
		if err := json.Unmarshal([]byte(probeOut.String()), res); err != nil || res.Tries == 0 {
			t.Fatalf("flow probe: %v\n%s%s", err, probeOut.String(), probeErr.String())
		}
		t.Logf("%s (by node %v)", res, res.ByNode)
		// Some indexer node is up at every moment of a correct roll (one node at a time), every alert
		// index has its replica from the template (no replica setting changed), no turn stops a node
		// holding a shard's only copy, and the probe passes a try on to the next node: every try
		// must be answered, and at least 99.9% of them with every shard (without the replicas the
		// lab's 2.11 → 2.19 roll measured 87%).
		if res.Answered != res.Tries {
			t.Errorf("%d of %d searches got no answer from any node (last failure: %s)", res.Tries-res.Answered, res.Tries, res.LastFailure)
		}
		if res.AllShards*1000 < res.Tries*999 {
			t.Errorf("%d of %d searches (%.2f%%) answered with every shard, want at least 99.9%% (last failure: %s)", res.AllShards, res.Tries, 100*res.Share, res.LastFailure)
		}
	})

	t.Run("every host at the target, health OK everywhere", func(t *testing.T) {
		everyHostAt(t, l, pkgVersion)
		r := must(t, "manager-2", "health", "--cluster")
		for _, want := range []string{"indexer cluster: OK   3 node(s), all on 2.19.4", "manager cluster: OK   2 node(s) connected, all on"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("health --cluster lacks %q:\n%s", want, r.Stdout)
			}
		}
	})
	t.Run("no event lost", func(t *testing.T) {
		stopSend()
		f := flowClean(t, "roll")
		// The closing note's row of this scenario.
		t.Logf("scenario 1 (upgrade.yml %s → %s): wall %s; events sent %d, written %d, indexed %d, lost %d, duplicated %d (lost in transit over UDP %d); "+
			"searches %d, answered %d, with every shard %d (%.2f%%), longest gap %.1fs; turns: %s",
			rollFrom, rollTo, rollWall.Round(100*time.Millisecond), f.Sent, f.Written, f.Indexed, f.Lost, f.Duplicates, f.LostInTransit,
			probe.Tries, probe.Answered, probe.AllShards, 100*probe.Share, probe.LongestGapS, strings.Join(parts, ", "))
	})

	// 2. ansible/rollback.yml rolls the completed roll back from the record as upgrade finish
	// --cluster left it.
	t.Run("ansible: rollback.yml after the completed roll", func(t *testing.T) {
		var backOut strings.Builder
		stopBack := l.SiemlabBackground(&backOut, &backOut, "flow", "send", "--tag", "back", "--rate", "5")
		var bprobeOut, bprobeErr strings.Builder
		stopBprobe := l.SiemlabBackground(&bprobeOut, &bprobeErr, "flow", "probe", "--every", "1s", "--json")
		pb := playbookOf(t, l.Dir, "rollback.yml", to)
		start := time.Now()
		err := pb.start(t).Wait()
		took := time.Since(start)
		stopBprobe()
		stopBack()
		if err != nil {
			t.Fatalf("rollback.yml after the completed roll: %v\n%s", err, tail(pb.out.String(), 8000))
		}
		t.Logf("rollback.yml in %s", took.Round(time.Second))
		st := clusterStatus(t, on("manager-1"))
		if st.Record.Phase != rollout.PhaseRolledBack {
			t.Errorf("record phase %s after rollback.yml, want rolled-back (note %q)", st.Record.Phase, st.Record.Note)
		}
		for _, e := range st.Record.Order {
			if e.State != rollout.Done {
				t.Errorf("entry %s is %s after the rollback", e.Name, e.State)
			}
		}
		everyHostAt(t, l, oldVersion)
		var res lab.SearchProbeResult
		if err := json.Unmarshal([]byte(bprobeOut.String()), &res); err == nil {
			t.Logf("during the rollback: %s", res)
		}
		// The events written after the apply's snapshot are not in it: each manager's shipper is
		// rewound to the run's start in its rollback turn and sends them again, each once.
		fr := flowClean(t, "roll")
		fb := flowClean(t, "back")
		t.Logf("scenario 2 (rollback.yml after the completed roll): wall %s; events written %d+%d, indexed %d+%d, lost %d+%d, duplicated %d+%d; "+
			"searches %d, answered %d, with every shard %d, longest gap %.1fs",
			took.Round(100*time.Millisecond), fr.Written, fb.Written, fr.Indexed, fb.Indexed, fr.Lost, fb.Lost, fr.Duplicates, fb.Duplicates,
			res.Tries, res.Answered, res.AllShards, res.LongestGapS)
	})

	if t.Failed() {
		t.FailNow()
	}

	// 3. A rollback after the first turn: the cluster-wide apply (its dry run first), the turns'
	// order and dry runs, the first host's turn by hand, then ansible/rollback.yml.
	var firstOut strings.Builder
	stopFirst := l.SiemlabBackground(&firstOut, &firstOut, "flow", "send", "--tag", "first", "--rate", "5")
	t.Run("apply --cluster on indexer-1", func(t *testing.T) {
		dry := must(t, "indexer-1", "upgrade", "apply", "--cluster", "--to", to, "--dry-run")
		for _, want := range []string{"preflight/snapshot-repository", "_verify", "indexer/allocation-primaries", "indexer/flush"} {
			if !strings.Contains(dry.Stdout+dry.Stderr, want) {
				t.Errorf("dry run lacks %q:\n%s%s", want, dry.Stdout, dry.Stderr)
			}
		}
		r := must(t, "indexer-1", "upgrade", "apply", "--cluster", "--to", to, "--yes")
		t.Logf("apply --cluster: %s\n%s", r.Took, r.Stderr)
	})
	if t.Failed() {
		t.FailNow()
	}
	order = rollOrder(t, on("indexer-1"))
	t.Logf("order: %s", strings.Join(order, ", "))
	t.Run("out of turn: exit 7 naming whose turn it is", func(t *testing.T) {
		r := on("manager-1").Siemctl("upgrade", "node", "--to", to, "--yes")
		if r.Code != 7 || !strings.Contains(r.Stdout+r.Stderr, order[0]) {
			t.Errorf("upgrade node on manager-1 first: exit %d, want 7 naming %s\n%s%s", r.Code, order[0], r.Stdout, r.Stderr)
		}
	})
	// Each host's dry run: only the steps of its own components, with the turn's calls.
	for _, h := range order {
		t.Run("dry run "+h, func(t *testing.T) {
			dry := must(t, h, "upgrade", "node", "--to", to, "--dry-run")
			if !strings.Contains(dry.Stdout, "turn: ") {
				t.Errorf("%s dry run does not show the turn's calls:\n%s", h, dry.Stdout)
			}
			comp := strings.SplitN(h, "-", 2)[0]
			for _, other := range []string{"indexer/stop", "manager/stop", "dashboard/stop"} {
				if strings.HasPrefix(other, comp+"/") != strings.Contains(dry.Stdout+dry.Stderr, "] "+other+" ") {
					t.Errorf("%s dry run and %s:\n%s%s", h, other, dry.Stdout, dry.Stderr)
				}
			}
		})
	}

	t.Run("ansible: rollback.yml after the first turn", func(t *testing.T) {
		must(t, order[0], "upgrade", "node", "--to", to, "--yes")
		pb := playbookOf(t, l.Dir, "rollback.yml", to)
		began := time.Now()
		err := pb.start(t).Wait()
		stopFirst()
		if err != nil {
			t.Fatalf("rollback.yml after the first turn: %v\n%s", err, tail(pb.out.String(), 8000))
		}
		rbTook := time.Since(began)
		st := clusterStatus(t, on("manager-1"))
		if st.Record.Phase != rollout.PhaseRolledBack {
			t.Errorf("record phase %s after rollback.yml, want rolled-back (note %q)", st.Record.Phase, st.Record.Note)
		}
		everyHostAt(t, l, oldVersion)
		f := flowClean(t, "first")
		t.Logf("scenario 3 (rollback.yml after the first turn): wall %s; events written %d, indexed %d, lost %d, duplicated %d",
			rbTook.Round(100*time.Millisecond), f.Written, f.Indexed, f.Lost, f.Duplicates)
	})
	if t.Failed() {
		t.FailNow()
	}

	// 4. A roll with what operators meet on the way: the election moves after the first indexer
	// turn, siemctl is killed on the worker mid-turn, the worker is refused with 3031.
	var faultsOut strings.Builder
	stopFaults := l.SiemlabBackground(&faultsOut, &faultsOut, "flow", "send", "--tag", "faults", "--rate", "5")
	faultsStart := time.Now()
	must(t, "indexer-1", "upgrade", "apply", "--cluster", "--to", to, "--yes")
	order = rollOrder(t, on("indexer-1"))
	// The elected cluster manager changes mid-roll: the first indexer node takes its turn, then the
	// election moves (the real voting configuration exclusions API) from the node the order put
	// last to the next one in the order; that node's take finds the order recomputed with itself
	// last (exit 7 naming the node whose turn it now is), and the roll goes on in the new order.
	if !t.Run("election moved after the first indexer turn: the order is recomputed", func(t *testing.T) {
		// While the first node is down in its own turn, status on its host (indexer.url: that
		// node) reads the record through another node it learned from _nodes/http, and says so.
		first := on(order[0])
		polled := make(chan []string, 1)
		turnEnded := make(chan struct{})
		go func() {
			var through []string
			for {
				select {
				case <-turnEnded:
					polled <- through
					return
				case <-time.After(time.Second):
				}
				if st, err := tryClusterStatus(first); err == nil && st.AnsweredBy != "" {
					through = append(through, st.AnsweredBy)
				}
			}
		}()
		must(t, order[0], "upgrade", "node", "--to", to, "--yes")
		close(turnEnded)
		if through := <-polled; len(through) == 0 || strings.Contains(through[0], order[0]) {
			t.Errorf("upgrade status --cluster on %s while its node was down in its turn: never answered through another node (%v)", order[0], through)
		} else {
			t.Logf("status on %s while its node was down: through %s (%d reads)", order[0], through[0], len(through))
		}
		before := clusterStatus(t, on("manager-1"))
		newElected, oldElected := order[1], order[2]
		if before.Record.ElectedManager != oldElected {
			t.Fatalf("the record's elected cluster manager is %q, want %s", before.Record.ElectedManager, oldElected)
		}
		l.MustSiemlab("fault", "election-moved:"+newElected)
		l.MustSiemlab("heal", "election-moved:"+newElected)
		r := on(newElected).Siemctl("upgrade", "node", "--to", to, "--yes")
		if r.Code != 7 || !strings.Contains(r.Stdout+r.Stderr, "indexer/"+oldElected) {
			t.Fatalf("upgrade node on %s, elected now: exit %d, want 7 naming indexer/%s\n%s%s", newElected, r.Code, oldElected, r.Stdout, r.Stderr)
		}
		st := clusterStatus(t, on("manager-1"))
		var got []string
		for _, e := range st.Record.Order {
			if strings.HasPrefix(string(e.Role), "indexer") {
				got = append(got, e.Name+" "+string(e.Role))
			}
		}
		want := []string{"indexer/" + order[0] + " indexer", "indexer/" + oldElected + " indexer", "indexer/" + newElected + " indexer-cluster-manager"}
		if st.Record.ElectedManager != newElected || !slices.Equal(got, want) {
			t.Fatalf("after the election moved to %s: elected %q, indexer order %v, want %v", newElected, st.Record.ElectedManager, got, want)
		}
		t.Logf("election moved %s -> %s; indexer order now %v", oldElected, newElected, got)
		order[1], order[2] = oldElected, newElected
	}) {
		t.FailNow()
	}

	// The turns through the fleet driver: ansible/upgrade.yml against the lab's inventory (each
	// host's env sourced before its siemctl). The record, not the inventory, says whose turn it is
	// (an election that moves mid-roll is followed). siemctl is killed with SIGKILL on the worker
	// mid-turn: the play stops there; the operator runs the playbook again, which resumes the roll
	// (no second apply) and the worker takes its own turn back and resumes its journal.
	pb := playbook(t, l.Dir, to)
	if !t.Run("ansible: kill -9 on the worker mid-turn stops the play", func(t *testing.T) {
		cmd := pb.start(t)
		pid := awaitTurnProcess(t, on("indexer-1"), cmd, "manager/manager-2")
		time.Sleep(3 * time.Second) // mid-step: its manager stopping or its databases being copied
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d: %v", pid, err)
		}
		if err := cmd.Wait(); err == nil {
			t.Fatalf("ansible-playbook succeeded although siemctl was killed on manager-2:\n%s", pb.out.String())
		}
		t.Logf("first play (stopped on manager-2):\n%s", tail(pb.out.String(), 4000))
	}) {
		t.FailNow()
	}
	// A worker refused with 3031 in its own turn: while the worker's turn was interrupted, the
	// master was changed alone (the lab's master-version-mismatch puts it back on the old
	// release). The playbook run again resumes the roll and the worker's turn, which waits at its
	// in-cluster gate; health on the worker names 3031 and the fix; the operator follows it on
	// the master; the turn ends and the roll finishes, without a second apply.
	l.MustSiemlab("fault", "master-version-mismatch")
	t.Run("ansible: run again, the worker's turn waits for the 3031 fix, the roll finishes", func(t *testing.T) {
		cmd := pb.start(t)
		ended := make(chan error, 1)
		go func() { ended <- cmd.Wait() }()
		var fix, last string
		for deadline := time.Now().Add(4 * time.Minute); fix == ""; time.Sleep(5 * time.Second) {
			select {
			case err := <-ended:
				t.Fatalf("the playbook ended (%v) before the worker was refused with 3031:\n%s", err, pb.out.String())
			default:
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				<-ended
				t.Fatalf("health on manager-2 never said 3031; last:\n%s\nplay:\n%s", last, tail(pb.out.String(), 4000))
			}
			r := on("manager-2").Siemctl("health", "--check", "manager.cluster")
			last = r.Stdout + r.Stderr
			if strings.Contains(r.Stdout, "this worker is refused by its master: versions differ (3031)") {
				fix = r.Stdout
			}
		}
		m := regexp.MustCompile(`if the master is older, on the master: (.+?), then (siemctl services restart manager);`).FindStringSubmatch(fix)
		if m == nil {
			cmd.Process.Kill()
			<-ended
			t.Fatalf("the worker's fix names no command for an older master:\n%s", fix)
		}
		t.Logf("manager-2 refused with 3031 in its own turn; following the fix on manager-1: %s; %s", m[1], m[2])
		for _, c := range []string{m[1], m[2] + " --yes"} {
			if r := l.For(t).Shell("manager-1", c); r.Code != 0 {
				t.Errorf("on manager-1: %s: exit %d\n%s%s", c, r.Code, r.Stdout, r.Stderr)
			}
		}
		if err := <-ended; err != nil {
			t.Fatalf("ansible-playbook run again: %v\n%s", err, pb.out.String())
		}
		out := pb.out.String()
		if strings.Contains(out, "TASK [upgrade apply --cluster") && !strings.Contains(out, "skipping: [indexer-1]") {
			t.Errorf("the playbook run again applied a second time:\n%s", out)
		}
		t.Logf("second play:\n%s", tail(out, 4000))
	})
	if t.Failed() {
		t.FailNow()
	}
	st = clusterStatus(t, on("manager-1"))
	for _, e := range st.Record.Order {
		if e.State != rollout.Done {
			t.Errorf("entry %s is %s after the roll", e.Name, e.State)
		}
		if e.Name == "manager/manager-2" && e.Attempts < 2 {
			t.Errorf("manager/manager-2 took %d attempt(s): the kill -9 should have made it resume", e.Attempts)
		}
	}
	if st.Record.Phase != rollout.PhaseDone {
		t.Errorf("the run is in phase %s after the playbook's finish, want done", st.Record.Phase)
	}
	everyHostAt(t, l, pkgVersion)
	stopFaults()
	f := flowClean(t, "faults")
	t.Logf("scenario 4 (the roll with an election moved, kill -9, 3031): wall %s; events written %d, indexed %d, lost %d, duplicated %d",
		time.Since(faultsStart).Round(100*time.Millisecond), f.Written, f.Indexed, f.Lost, f.Duplicates)
}

// turnEnd is the note of indexer/health, the last gate of node's indexer turn, in the node run
// host (the lab host of that indexer node) started at or after since.
func turnEnd(t *testing.T, l *e2e.Lab, host string, since time.Time) string {
	t.Helper()
	hl := l.OnHost(t, host)
	dir := filepath.Join(l.Dir, "hosts", host, "root", "var", "lib", "siemctl", "runs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%s's runs: %v", host, err)
	}
	for _, ent := range ents {
		stamp, _, _ := strings.Cut(ent.Name(), "-")
		at, err := time.Parse("20060102T150405Z", stamp)
		if err != nil || at.Before(since.Truncate(time.Second)) {
			continue
		}
		r := hl.Siemctl("upgrade", "status", ent.Name(), "-o", "json")
		var run struct {
			Runbook string `json:"runbook"`
			Steps   []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Note   string `json:"note"`
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &run); err != nil || run.Runbook != "node" {
			continue
		}
		for _, s := range run.Steps {
			if s.ID == "indexer/health" && s.Status == "ok" {
				return s.Note
			}
		}
	}
	t.Errorf("%s: no node run since %s whose indexer/health passed (runs in %s)", host, since.Format(time.RFC3339), dir)
	return ""
}

// playbookOf is playbook for another of ansible/'s playbooks (rollback.yml).
func playbookOf(t *testing.T, dir, file, to string) playbookRun {
	t.Helper()
	p := playbook(t, dir, to)
	pbFile, err := filepath.Abs("../../../ansible/" + file)
	if err != nil {
		t.Fatal(err)
	}
	p.args[3] = pbFile
	return p
}

// rollOrder is the order of the hosts: the indexer nodes with the elected cluster manager last,
// the manager master, the worker, the dashboard.
func rollOrder(t *testing.T, l *e2e.Lab) []string {
	t.Helper()
	r := l.Siemctl("health", "--cluster")
	elected := ""
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "(elected cluster manager)") {
			elected, _, _ = strings.Cut(line, ":")
		}
	}
	if elected == "" {
		t.Fatalf("no elected cluster manager in health --cluster:\n%s%s", r.Stdout, r.Stderr)
	}
	var order []string
	for _, h := range []string{"indexer-1", "indexer-2", "indexer-3"} {
		if h != elected {
			order = append(order, h)
		}
	}
	order = append(order, elected, "manager-1", "manager-2", "dashboard-1")
	if len(slices.Compact(slices.Sorted(slices.Values(order)))) != 6 {
		t.Fatalf("order %v", order)
	}
	return order
}

// everyHostAt checks that every package of every host of the distributed lab l is at version
// (a Debian version) and that health is OK on each host.
func everyHostAt(t *testing.T, l *e2e.Lab, version string) {
	t.Helper()
	for _, h := range lab.DistHosts {
		for p, v := range hostPackages(t, filepath.Join(l.Dir, "hosts", h.Name)) {
			if v != version {
				t.Errorf("%s: package %s is %s, want %s", h.Name, p, v, version)
			}
		}
		healthOK(t, l.OnHost(t, h.Name))
	}
}

// hostPackages are the versions of the stack's packages installed on one host of the lab (each
// runs some of them).
func hostPackages(t *testing.T, dir string) map[string]string {
	t.Helper()
	hl, err := lab.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("dpkg-query", "--admindir="+filepath.Join(dir, "root", "var/lib/dpkg"), "-W", "-f=${Package} ${Version} ${db:Status-Status}\n").Output()
	if err != nil {
		t.Fatalf("dpkg-query: %v", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "installed" && slices.Contains(hl.Profile().Packages(), f[0]) {
			m[f[0]] = f[1]
		}
	}
	if len(m) == 0 {
		t.Fatalf("%s: none of %v installed", dir, hl.Profile().Packages())
	}
	return m
}

func clusterStatus(t *testing.T, hl *e2e.Lab) roll.Status {
	t.Helper()
	st, err := tryClusterStatus(hl)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// tryClusterStatus reads the record (through another indexer node, answered_by, while the one the
// host's siemctl talks to is restarting in its turn).
func tryClusterStatus(hl *e2e.Lab) (roll.Status, error) {
	r := hl.Siemctl("upgrade", "status", "--cluster", "-o", "json")
	var st roll.Status
	if err := json.Unmarshal([]byte(r.Stdout), &st); r.Code != 0 || err != nil {
		return st, fmt.Errorf("upgrade status --cluster: exit %d (%v)\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return st, nil
}

// playbookRun is ansible/upgrade.yml run against a distributed lab's inventory; out collects
// every run's output.
type playbookRun struct {
	args []string
	out  *strings.Builder
}

func playbook(t *testing.T, dir, to string) playbookRun {
	t.Helper()
	bin := testenv.Tool(t, "scripts/install-deps.sh installs it (ansible-core)", "ansible-playbook")
	siemctl, _ := e2e.Binaries(t)
	pbFile, err := filepath.Abs("../../../ansible/upgrade.yml")
	if err != nil {
		t.Fatal(err)
	}
	return playbookRun{args: []string{bin, "-i", filepath.Join(dir, "inventory.ini"), pbFile,
		"-e", "siemctl_target=" + to, "-e", "siemctl_bin=" + siemctl, "-e", "siemctl_turn_delay=5"}, out: &strings.Builder{}}
}

func (p playbookRun) start(t *testing.T) *exec.Cmd {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1", "ANSIBLE_HOME="+home, "ANSIBLE_LOCAL_TEMP="+home, "ANSIBLE_RETRY_FILES_ENABLED=0")
	p.out.Reset()
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// awaitTurnProcess waits until entry is running in the record and returns the PID of the
// `siemctl upgrade node` the playbook (cmd) started for it: a process of cmd's own tree.
func awaitTurnProcess(t *testing.T, hl *e2e.Lab, cmd *exec.Cmd, entry string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		if cmd.ProcessState != nil {
			t.Fatalf("ansible-playbook ended before %s's turn", entry)
		}
		st, err := tryClusterStatus(hl)
		if err != nil { // its indexer restarting in its own turn: ask again
			time.Sleep(time.Second)
			continue
		}
		running := false
		for _, e := range st.Record.Order {
			running = running || e.Name == entry && e.State == "running"
		}
		if running {
			if pid := descendant(cmd.Process.Pid, "upgrade", "node"); pid > 0 {
				return pid
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s never ran", entry)
	return 0
}

// descendant is the PID of a process in root's tree whose command line holds words in order
// (0: none).
func descendant(root int, words ...string) int {
	parent := map[int]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		k := strings.LastIndexByte(s, ')')
		if k < 0 {
			continue
		}
		f := strings.Fields(s[k+1:])
		var pid, ppid int
		fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid)
		if len(f) > 1 {
			fmt.Sscan(f[1], &ppid)
		}
		parent[pid] = ppid
	}
	for pid := range parent {
		in := false
		for q := pid; q > 1 && !in; q = parent[q] {
			in = q == root
		}
		if !in || pid == root {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) > len(words) && filepath.Base(args[0]) == "siemctl" && slices.Equal(args[1:1+len(words)], words) {
			return pid
		}
	}
	return 0
}
