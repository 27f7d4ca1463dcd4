package upgrade

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
)

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
		if _, got := noGoAfterStart(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}

// TestBeginAutoRollback: the record goes rolling-back naming the node, the reason and the node's
// log (exit 10); when the cluster cannot be written from this host (its node is the one that did
// not rejoin), the host keeps the record rolling back for prepare, with the run's snapshot.
func TestBeginAutoRollback(t *testing.T) {
	ctx := context.Background()
	r := newClusterRig(t)
	rec := r.rolling(t)
	s := r.store()
	if _, err := s.SetSnapshot(ctx, rec.RunID, []byte(`{"repository":"siemctl","name":"siemctl-20261128t010000z-abc123"}`)); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Load(ctx)
	cause := &engine.FailedError{RunID: "n1", Step: "indexer/rejoined", Err: &engine.GateError{Step: "indexer/rejoined", Reason: "indexer-1 not in the cluster yet"}}
	diag := []string{"cause: handshake failed: remote cluster name [siem-lab] does not match local cluster name [siemlab-no-rejoin]"}
	var errOut strings.Builder
	err := beginAutoRollback(ctx, r.deps, rec, "indexer/indexer-1", cause, diag, &errOut)
	if cli.ExitCode(err) != 10 || !strings.Contains(err.Error(), "indexer/indexer-1") || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("exit %d: %v", cli.ExitCode(err), err)
	}
	got, _ := s.Load(ctx)
	if got.Phase != rollout.PhaseRollingBack || got.Rollback == nil || got.Rollback.Entry != "indexer/indexer-1" ||
		!strings.Contains(got.Rollback.Cause, "indexer/rejoined") || !strings.Contains(got.Rollback.Cause, "does not match") || got.Rollback.Host != "host-a" {
		t.Fatalf("record %s %+v", got.Phase, got.Rollback)
	}

	// the cluster not reachable from this host
	r2 := newClusterRig(t)
	rec2 := r2.rolling(t)
	rec2.Snapshot = []byte(`{"repository":"siemctl","name":"s1"}`)
	r2.deps.Indexer = func(context.Context) (ClusterIndexer, error) {
		return nil, errors.New("dial tcp 127.0.0.12:9200: connection refused")
	}
	err = beginAutoRollback(ctx, r2.deps, rec2, "indexer/indexer-1", cause, nil, &errOut)
	var rb *rollout.RollingBackError
	if !errors.As(err, &rb) || rb.Mark == nil || cli.ExitCode(err) != 10 {
		t.Fatalf("unreachable: %v", err)
	}
	kept, lerr := rollout.LoadCopy(r2.cfg.StateDir)
	if lerr != nil || kept.Phase != rollout.PhaseRollingBack || kept.Rollback.Entry != "indexer/indexer-1" || len(kept.Snapshot) == 0 {
		t.Fatalf("kept copy: %v %s %+v %s", lerr, kept.Phase, kept.Rollback, kept.Snapshot)
	}
	if e, _ := kept.Entry("indexer/indexer-1"); e.State != rollout.Failed {
		t.Errorf("the failed entry is %s in the kept copy", e.State)
	}
	// prepare on this host then has nothing to do while the cluster does not answer
	if why := prepared(ctx, r2.deps, &kept); !strings.Contains(why, "prepared already") {
		t.Errorf("prepared: %q", why)
	}
}

// TestPrepared: prepare runs unless this host kept the run rolling back and the cluster no longer
// holds its original record (written back with its turns, or rolled back).
func TestPrepared(t *testing.T) {
	ctx := context.Background()
	r := newClusterRig(t)
	rec := r.rolling(t)
	s := r.store()
	if why := prepared(ctx, r.deps, nil); why != "" {
		t.Errorf("no copy: %q", why)
	}
	began, err := s.Begin(ctx, rec.RunID, "host-a", "", "siemctl rollback --cluster")
	if err != nil {
		t.Fatal(err)
	}
	if why := prepared(ctx, r.deps, &began); why != "" {
		t.Errorf("the original record still in the cluster: %q (prepare runs again, harmless)", why)
	}
	other := began
	other.RunID = "20261128T020000Z-other"
	if why := prepared(ctx, r.deps, &other); why != "" {
		t.Errorf("a copy of another run: %q", why)
	}
	// the fresh cluster with the record written back
	fresh := newClusterRig(t)
	if _, err := fresh.store().Reinstate(ctx, began); err != nil {
		t.Fatal(err)
	}
	if why := prepared(ctx, fresh.deps, &began); !strings.Contains(why, "prepared already") {
		t.Errorf("written back: %q", why)
	}
}

// TestRollbackClusterDryRun: --dry-run without --phase prints every call of every phase, each
// under its phase's header, and changes nothing; a phase by hand needs the copy prepare keeps;
// without --phase and --dry-run the command names the phases.
func TestRollbackClusterDryRun(t *testing.T) {
	ctx := context.Background()
	r := newClusterRig(t, "indexer", "manager", "shipper", "dashboard")
	r.rolling(t)
	io, _, out, _ := output.Test()
	deps := &steps.Deps{Config: r.cfg, Indexer: clientset.Of[steps.IndexerAPI](r.srv.Client(t)), Poll: time.Millisecond, Now: time.Now}
	o := &RollbackClusterOptions{Common: runs.Common{IO: io, Deps: func(context.Context) (*steps.Deps, error) { return deps, nil }},
		DryRun: true, Turn: TurnOptions{Cluster: r.deps, Lease: DefaultLease}}
	writes := r.docs.Writes()
	if err := RunRollbackCluster(ctx, o); err != nil {
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
	if r.docs.Writes() != writes {
		t.Errorf("the dry run wrote the record %d times", r.docs.Writes()-writes)
	}

	o.DryRun, o.Phase = false, "indexer-down"
	if err := RunRollbackCluster(ctx, o); err == nil || !strings.Contains(err.Error(), "--phase prepare") {
		t.Errorf("indexer-down without a kept copy: %v", err)
	}
	o.Phase = ""
	if err := RunRollbackCluster(ctx, o); cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "rollback.yml") {
		t.Errorf("no phase: %v (exit %d)", err, cli.ExitCode(err))
	}
}
