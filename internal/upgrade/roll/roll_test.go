package roll_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
	"github.com/siemctl/siemctl/internal/upgrade/roll/rolltest"
)

// TestInTurn: the turn part of upgrade node: work under the turn, the turn given back when
// nothing changed, exit 7 naming whose turn it is, exit 6 while this host's lock is held.
func TestInTurn(t *testing.T) {
	ctx := context.Background()
	r, o := rolling(t)
	var errOut strings.Builder

	// Give back: nothing was changed.
	err := roll.InTurn(ctx, o, &errOut, func(context.Context, *rollout.Turn) error {
		return fmt.Errorf("preflight refused: %w", rollout.ErrNothingDone)
	})
	if !errors.Is(err, rollout.ErrNothingDone) || !strings.Contains(errOut.String(), "given back") {
		t.Fatalf("give back: %v\n%s", err, errOut.String())
	}
	var ran *rollout.Turn
	if err := roll.InTurn(ctx, o, &errOut, func(_ context.Context, turn *rollout.Turn) error { ran = turn; return nil }); err != nil {
		t.Fatal(err)
	}
	if ran == nil || ran.Entry().Name != "indexer/indexer-1" || ran.Entry().State != rollout.Done || ran.Entry().Attempts != 2 {
		t.Fatalf("turn %+v", ran)
	}
	// indexer-1 is done: the next turn is indexer-3's, not this host's.
	err = roll.InTurn(ctx, o, &errOut, func(context.Context, *rollout.Turn) error { t.Fatal("worked out of turn"); return nil })
	var nyt *rollout.NotYourTurnError
	if !errors.As(err, &nyt) || nyt.Whose != "indexer/indexer-3" || cli.ExitCode(err) != cli.ExitNotYourTurn {
		t.Fatalf("out of turn: %v (exit %d)", err, cli.ExitCode(err))
	}
	// Another siemctl holds this host's lock: nothing is read or written.
	held, err := lock.Acquire(ctx, lock.HostPath(r.Cfg.StateDir), lock.Holder{Command: "siemctl upgrade node"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	o.Roll.HostLock = func(ctx context.Context) (func(), error) {
		l, err := lock.Acquire(ctx, lock.HostPath(r.Cfg.StateDir), lock.Holder{Command: "test"}, 0)
		if err != nil {
			return nil, err
		}
		return func() { _ = l.Release() }, nil
	}
	writes := r.Docs.Writes()
	if err := roll.InTurn(ctx, o, &errOut, nil); cli.ExitCode(err) != cli.ExitLocked || r.Docs.Writes() != writes {
		t.Fatalf("with the host lock held: %v (exit %d), %d writes", err, cli.ExitCode(err), r.Docs.Writes()-writes)
	}
	if err := (&roll.TurnOptions{Lease: time.Millisecond}).Check(); err == nil {
		t.Fatal("a 1ms lease passed Check")
	}
}

// TestTurnCalls: the dry run of a turn names the record's calls and whose turn it is.
func TestTurnCalls(t *testing.T) {
	r := rolltest.New(t, "manager", "shipper")
	// This host is the master: <node_name> of its ossec.conf.
	install := t.TempDir()
	if err := os.MkdirAll(filepath.Join(install, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "<ossec_config>\n  <cluster>\n    <name>wazuh</name>\n    <node_name>manager-1</node_name>\n    <node_type>master</node_type>\n    <disabled>no</disabled>\n  </cluster>\n</ossec_config>\n"
	if err := os.WriteFile(filepath.Join(install, "etc", "ossec.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Cfg.Manager.InstallDir = install
	r.Rolling(t)
	lines, err := roll.TurnCalls(context.Background(), r.Turn())
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"GET /siemctl-rollout/_doc/run", "[manager/manager-1; the turn now: indexer/indexer-1 (pending)]", "renew the lease", "done or failed"} {
		if !strings.Contains(all, want) {
			t.Errorf("calls lack %q:\n%s", want, all)
		}
	}
	if r.Docs.Writes() != 2 {
		t.Fatalf("the dry run wrote: %d writes (2 were the setup's)", r.Docs.Writes())
	}
}

// TestInTurnNoGoPastStart: a turn that failed after its node ran the new version does not tell the
// operator to resume it (the deployment rolls back instead); any other failure does.
func TestInTurnNoGoPastStart(t *testing.T) {
	ctx := context.Background()
	_, o := rolling(t)
	var errOut strings.Builder
	err := roll.InTurn(ctx, o, &errOut, func(context.Context, *rollout.Turn) error {
		return &engine.RolledBackError{RunID: "r1", Step: "indexer/rejoined", Cause: errors.New("node not back")}
	})
	if err == nil || strings.Contains(errOut.String(), "run the same command again") || !strings.Contains(errOut.String(), "after its node ran the new version") {
		t.Fatalf("no-go past the start: %v\n%s", err, errOut.String())
	}
	errOut.Reset()
	err = roll.InTurn(ctx, o, &errOut, func(context.Context, *rollout.Turn) error { return errors.New("apt failed") })
	if err == nil || !strings.Contains(errOut.String(), "run the same command again on this host to resume it") {
		t.Fatalf("an ordinary failure: %v\n%s", err, errOut.String())
	}
}

// TestNoGoAfterStart: a failure past an indexer node's start (it ran the new version) or a turn
// the engine rolled back rolls the deployment back; a failure before the start does not (the same
// command resumes it).
func TestNoGoAfterStart(t *testing.T) {
	gate := &engine.GateError{Step: "indexer/rejoined", Reason: "indexer-2 not in the cluster yet"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&engine.FailedError{RunID: "r", Step: "indexer/rejoined", Err: gate}, true},
		{errors.Join(&engine.FailedError{RunID: "r", Step: "indexer/health", Err: gate}, errors.New("mark failed: unreachable")), true},
		{&engine.FailedError{RunID: "r", Step: "indexer/install", Err: errors.New("apt")}, false},
		{&engine.RolledBackError{RunID: "r", Step: "manager/api"}, true},
		{errors.New("unreachable"), false},
	} {
		if _, got := roll.NoGoAfterStart(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}

// TestBeginAutoRollback: the record goes rolling-back naming the node, the reason and the node's
// log (exit 10); when the cluster cannot be written from this host (its node is the one that did
// not rejoin), the host keeps the record rolling back for prepare, with the run's snapshot.
func TestBeginAutoRollback(t *testing.T) {
	ctx := context.Background()
	r := rolltest.New(t)
	rec := r.Rolling(t)
	s := r.Store()
	if _, err := s.SetSnapshot(ctx, rec.RunID, []byte(`{"repository":"siemctl","name":"siemctl-20261128t010000z-abc123"}`)); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Load(ctx)
	cause := &engine.FailedError{RunID: "n1", Step: "indexer/rejoined", Err: &engine.GateError{Step: "indexer/rejoined", Reason: "indexer-1 not in the cluster yet"}}
	diag := []string{"cause: handshake failed: remote cluster name [siem-lab] does not match local cluster name [siemlab-no-rejoin]"}
	var errOut strings.Builder
	err := roll.BeginAutoRollback(ctx, r.Deps, rec, "indexer/indexer-1", cause, diag, &errOut)
	if cli.ExitCode(err) != 10 || !strings.Contains(err.Error(), "indexer/indexer-1") || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("exit %d: %v", cli.ExitCode(err), err)
	}
	got, _ := s.Load(ctx)
	if got.Phase != rollout.PhaseRollingBack || got.Rollback == nil || got.Rollback.Entry != "indexer/indexer-1" ||
		!strings.Contains(got.Rollback.Cause, "indexer/rejoined") || !strings.Contains(got.Rollback.Cause, "does not match") || got.Rollback.Host != "host-a" {
		t.Fatalf("record %s %+v", got.Phase, got.Rollback)
	}

	// the cluster not reachable from this host
	r2 := rolltest.New(t)
	rec2 := r2.Rolling(t)
	rec2.Snapshot = []byte(`{"repository":"siemctl","name":"s1"}`)
	r2.Deps.Indexer = func(context.Context) (roll.Indexer, error) {
		return nil, errors.New("dial tcp 127.0.0.12:9200: connection refused")
	}
	err = roll.BeginAutoRollback(ctx, r2.Deps, rec2, "indexer/indexer-1", cause, nil, &errOut)
	var rb *rollout.RollingBackError
	if !errors.As(err, &rb) || rb.Mark == nil || cli.ExitCode(err) != 10 {
		t.Fatalf("unreachable: %v", err)
	}
	kept, lerr := rollout.LoadCopy(r2.Cfg.StateDir)
	if lerr != nil || kept.Phase != rollout.PhaseRollingBack || kept.Rollback.Entry != "indexer/indexer-1" || len(kept.Snapshot) == 0 {
		t.Fatalf("kept copy: %v %s %+v %s", lerr, kept.Phase, kept.Rollback, kept.Snapshot)
	}
	if e, _ := kept.Entry("indexer/indexer-1"); e.State != rollout.Failed {
		t.Errorf("the failed entry is %s in the kept copy", e.State)
	}
	// prepare on this host then has nothing to do while the cluster does not answer
	if why := roll.Prepared(ctx, r2.Deps, &kept); !strings.Contains(why, "prepared already") {
		t.Errorf("prepared: %q", why)
	}
}

// TestPrepared: prepare runs unless this host kept the run rolling back and the cluster no longer
// holds its original record (written back with its turns, or rolled back).
func TestPrepared(t *testing.T) {
	ctx := context.Background()
	r := rolltest.New(t)
	rec := r.Rolling(t)
	s := r.Store()
	if why := roll.Prepared(ctx, r.Deps, nil); why != "" {
		t.Errorf("no copy: %q", why)
	}
	began, err := s.Begin(ctx, rec.RunID, "host-a", "", "siemctl rollback --cluster")
	if err != nil {
		t.Fatal(err)
	}
	if why := roll.Prepared(ctx, r.Deps, &began); why != "" {
		t.Errorf("the original record still in the cluster: %q (prepare runs again, harmless)", why)
	}
	other := began
	other.RunID = "20261128T020000Z-other"
	if why := roll.Prepared(ctx, r.Deps, &other); why != "" {
		t.Errorf("a copy of another run: %q", why)
	}
	// the fresh cluster with the record written back
	fresh := rolltest.New(t)
	if _, err := fresh.Store().Reinstate(ctx, began); err != nil {
		t.Fatal(err)
	}
	if why := roll.Prepared(ctx, fresh.Deps, &began); !strings.Contains(why, "prepared already") {
		t.Errorf("written back: %q", why)
	}
}

// TestRollbackClusterDryRun: --dry-run without --phase prints every call of every phase, each
// under its phase's header, and changes nothing; a phase by hand needs the copy prepare keeps;
// without --phase and --dry-run the command names the phases.
func TestRollbackClusterDryRun(t *testing.T) {
	ctx := context.Background()
	r := rolltest.New(t, "indexer", "manager", "shipper", "dashboard")
	r.Rolling(t)
	io, _, out, _ := output.Test()
	deps := &steps.Deps{Config: r.Cfg, Indexer: clientset.Of[steps.IndexerAPI](r.Srv.Client(t)), Poll: time.Millisecond, Now: time.Now}
	o := &roll.RollbackRequest{Common: runs.Common{IO: io, Deps: func(context.Context) (*steps.Deps, error) { return deps, nil }},
		DryRun: true, Turn: roll.TurnOptions{Roll: r.Deps, Lease: roll.DefaultLease}}
	writes := r.Docs.Writes()
	if err := roll.Rollback(ctx, o); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	last := -1
	for _, want := range []string{
		"## phase prepare", "rollout.rollback_prepare", "PUT /siemctl-rollout/_doc/run?if_primary_term", "prepare/shipper-stop",
		"## phase indexer-down", "indexer-down/stop", "indexer-down/downgrade", "--allow-downgrades", "indexer-down/data-aside",
		"## phase indexer-up", "indexer-up/start",
		"## phase restore", "restore/security", "_restore", "restore/green", "restore/record", "op_type=create",
		"## phase node", "turn: GET /siemctl-rollout/_doc/run", "manager/downgrade", "manager/db", "shipper/pipelines", "dashboard/up",
		"## phase finish", "rolled-back", "finish/no-trace",
	} {
		i := strings.Index(text[max(last, 0):], want)
		if i < 0 {
			t.Errorf("dry run lacks %q after position %d:\n%s", want, last, text)
			continue
		}
		last += i + 1
	}
	if r.Docs.Writes() != writes {
		t.Errorf("the dry run wrote the record %d times", r.Docs.Writes()-writes)
	}

	o.DryRun, o.Phase = false, "indexer-down"
	if err := roll.Rollback(ctx, o); err == nil || !strings.Contains(err.Error(), "--phase prepare") {
		t.Errorf("indexer-down without a kept copy: %v", err)
	}
	o.Phase = ""
	if err := roll.Rollback(ctx, o); cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "rollback.yml") {
		t.Errorf("no phase: %v (exit %d)", err, cli.ExitCode(err))
	}
}

// rolling is a rig whose run is rolling, and this host's turn options in it.
func rolling(t *testing.T) (*rolltest.Rig, roll.TurnOptions) {
	t.Helper()
	r := rolltest.New(t)
	r.Rolling(t)
	return r, r.Turn()
}

// TestAwaitCopies: an indexer turn waits, before anything changes, while its node holds a shard's
// only active copy and the other copy is still coming; it names the shards of indices with no
// replica without waiting for them; past roll.CopiesWait it gives the turn back naming the shards.
// A manager's turn reads no shard.
func TestAwaitCopies(t *testing.T) {
	ctx := context.Background()
	row := func(index string, shard int, prirep, state, node string) string {
		n := "null"
		if node != "" {
			n = `"` + node + `"`
		}
		return fmt.Sprintf(`{"index":%q,"shard":"%d","prirep":%q,"state":%q,"unassigned.reason":null,"node":%s}`, index, shard, prirep, state, n)
	}
	const day = "wazuh-alerts-4.x-2026.12.08"
	recovering := "[" + strings.Join([]string{row(day, 0, "p", "STARTED", "indexer-1"), row(day, 0, "r", "INITIALIZING", "indexer-3"),
		row(day, 1, "p", "STARTED", "indexer-3"), row(day, 1, "r", "STARTED", "indexer-1"), row("wazuh-monitoring-2026.49w", 0, "p", "STARTED", "indexer-1")}, ",") + "]"
	recovered := strings.Replace(recovering, "INITIALIZING", "STARTED", 1)
	indexerTurn := rollout.Entry{Name: "indexer/indexer-1", Role: rollout.RoleIndexer}

	for _, c := range []struct {
		name    string
		entry   rollout.Entry
		answers []string // _cat/shards, one per call (the last repeats)
		calls   int
		wantErr bool
		want    []string
	}{
		{"the replica recovers, then the turn goes on", indexerTurn, []string{recovering, recovering, recovered}, 3, false,
			[]string{"waiting (up to 15m0s) before indexer-1 stops: 1 shard(s) have their only active copy on indexer-1", day + "[0]",
				"belong to indices with no replica (wazuh-monitoring-2026.49w[0])", "its turn goes on"}},
		{"nothing held alone", indexerTurn, []string{recovered}, 1, false, []string{"wazuh-monitoring-2026.49w[0]"}},
		{"never recovers: given back", indexerTurn, []string{recovering}, 0, true, []string{"waiting"}},
		{"a manager's turn", rollout.Entry{Name: "manager/manager-1", Role: rollout.RoleManagerMaster}, []string{recovering}, 0, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rolltest.New(t)
			calls := 0
			r.Srv.Set("GET /_cat/shards", indexertest.Route{Handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(c.answers[min(calls, len(c.answers)-1)]))
				calls++
			}})
			o := r.Turn()
			o.Poll = time.Millisecond
			tick := 0
			o.Roll.Now = func() time.Time { tick++; return r.Clock.Add(time.Duration(tick) * time.Minute) }
			var errOut strings.Builder
			err := roll.AwaitCopies(ctx, o, c.entry, &errOut)
			if (err != nil) != c.wantErr || c.wantErr && (!errors.Is(err, rollout.ErrNothingDone) || !strings.Contains(err.Error(), day+"[0]")) {
				t.Fatalf("err %v, want error %v naming %s[0] and giving the turn back\n%s", err, c.wantErr, day, errOut.String())
			}
			if c.calls > 0 && calls != c.calls || c.entry.Role == rollout.RoleManagerMaster && calls != 0 {
				t.Errorf("%d _cat/shards calls, want %d", calls, c.calls)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, errOut.String())
				}
			}
		})
	}
}
