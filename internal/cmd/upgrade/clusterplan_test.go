package upgrade

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
	"github.com/siemctl/siemctl/internal/upgrade/roll/rolltest"
)

// clusterPlanRig is rolltest.New whose host (indexer-1, siem-indexer 4.9.0-1 installed, 4.9.0-1
// and 4.10.0-1 in its repository) can evaluate apply --cluster's preflight gates: the indexer
// cluster green, no archived setting, the snapshot repository as verify says.
func clusterPlanRig(t *testing.T, verify indexertest.Route) (*rolltest.Rig, runs.Common) {
	t.Helper()
	r := rolltest.New(t)
	for k, v := range indexertest.Healthy() {
		if k != "GET /_nodes" {
			r.Srv.Set(k, v)
		}
	}
	r.Srv.Set("POST /_snapshot/siemctl/_verify", verify)
	r.Srv.Set("GET /_nodes/settings", indexertest.Route{Body: []byte(`{"nodes":{"Xq1":{"name":"indexer-1","settings":{"path":{"repo":["/srv/snap"]}}},` +
		`"Xq2":{"name":"indexer-2","settings":{"path":{"repo":["/srv/snap"]}}},"Xq3":{"name":"indexer-3","settings":{"path":{"repo":["/srv/snap"]}}}}}`)})
	d := t.TempDir()
	cfg := clitest.LoadConfig(t, d, "components: [indexer]\nstate_dir: "+d+"/state\nbackup_dir: "+d+"/backups\nindexer:\n  config_dir: "+r.Cfg.Indexer.ConfigDir+"\n")
	pm, err := packages.New("apt", &fakeApt{installed: map[string]string{"siem-indexer": "4.9.0-1"}})
	if err != nil {
		t.Fatal(err)
	}
	deps := &steps.Deps{Config: cfg, Packages: clientset.Of[steps.PackagesAPI](pm), Indexer: clientset.Of[steps.IndexerAPI](r.Srv.Client(t)), Poll: time.Millisecond, Now: time.Now}
	io, _, _, _ := output.Test()
	return r, runs.Common{IO: io, Output: "json", Deps: func(context.Context) (*steps.Deps, error) { return deps, nil }, Now: time.Now, Poll: time.Millisecond}
}

var verifiedByAll = indexertest.Route{Body: []byte(`{"nodes":{"Xq1":{"name":"indexer-1"},"Xq2":{"name":"indexer-2"},"Xq3":{"name":"indexer-3"}}}`)}

func planCluster(t *testing.T, r *rolltest.Rig, c runs.Common, to string) (roll.Plan, error) {
	t.Helper()
	io, _, out, _ := output.Test()
	c.IO = io
	err := runPlanCluster(context.Background(), &PlanOptions{Common: c, To: to, ClusterMode: true, Cluster: r.Deps})
	var rep roll.Plan
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		t.Fatalf("%v (output %s)", jerr, out)
	}
	return rep, err
}

func gateOf(rep roll.Plan, step string) upgrade.GateResult {
	for _, g := range rep.Preflight {
		if g.Step == step {
			return g
		}
	}
	return upgrade.GateResult{}
}

// TestRunPlanClusterJudges: upgrade plan --cluster evaluates apply --cluster's preflight gates
// (issue 34 item 3): a target no repository offers, a downgrade, an unregistered snapshot
// repository are each a NO-GO (exit 3) with the reason and the fix; the gates that hold say GO.
func TestRunPlanClusterJudges(t *testing.T) {
	r, c := clusterPlanRig(t, verifiedByAll)
	rep, err := planCluster(t, r, c, "9.9.9")
	if cli.ExitCode(err) != cli.ExitNoGo || rep.Verdict != "NO-GO" {
		t.Fatalf("--to 9.9.9: %v (exit %d), verdict %s", err, cli.ExitCode(err), rep.Verdict)
	}
	if g := gateOf(rep, "preflight/versions"); g.Verdict != upgrade.VerdictNoGo || !strings.Contains(g.Detail, "target 9.9.9 is not installable on this host") {
		t.Errorf("--to 9.9.9: versions gate %+v", g)
	}
	for _, step := range []string{"preflight/cluster-green", "preflight/snapshot-repository", "preflight/settings"} {
		if g := gateOf(rep, step); g.Verdict != upgrade.VerdictGo {
			t.Errorf("%s: %s %q, want GO", step, g.Verdict, g.Detail)
		}
	}
	if !strings.Contains(strings.Join(rep.Problems, "\n"), "preflight/versions: target 9.9.9") {
		t.Errorf("problems %q lack the versions gate", rep.Problems)
	}

	// a downgrade: this host's gate and the manager nodes' versions both say so
	r.Deps.Manager = func(context.Context) (rollout.ManagerFacts, error) {
		return rolltest.FakeManager{Nodes: []manager.ClusterNode{{Name: "manager-1", Type: "master", Version: "v4.9.0"}}}, nil
	}
	rep, err = planCluster(t, r, c, "4.8.0")
	if cli.ExitCode(err) != cli.ExitNoGo || !strings.Contains(strings.Join(rep.Problems, "\n"), "manager node manager-1 runs 4.9.0, newer than the target 4.8.0") {
		t.Errorf("--to 4.8.0: %v, problems %q", err, rep.Problems)
	}

	// the repository not registered, path.repo on every node: the fix is the prepare command alone
	r, c = clusterPlanRig(t, indexertest.Route{Status: http.StatusNotFound,
		Body: []byte(`{"error":{"root_cause":[{"type":"repository_missing_exception","reason":"[siemctl] missing"}],"type":"repository_missing_exception","reason":"[siemctl] missing"},"status":404}`)})
	rep, err = planCluster(t, r, c, "4.10.0")
	g := gateOf(rep, "preflight/snapshot-repository")
	if cli.ExitCode(err) != cli.ExitNoGo || g.Verdict != upgrade.VerdictNoGo || !strings.Contains(g.Detail, "siemctl indexer repository prepare --yes") || strings.Contains(g.Detail, "no path.repo") {
		t.Errorf("repository missing: %v, gate %+v", err, g)
	}
	if gateOf(rep, "preflight/versions").Verdict != upgrade.VerdictGo {
		t.Errorf("4.10.0 offered: versions gate %+v", gateOf(rep, "preflight/versions"))
	}
}

// TestApplyClusterRefusesARunInProgress: apply --cluster with a run of the cluster not ended is a
// no-go (exit 3) before any gate runs: nothing is journaled on this host (it does not become the
// host's latest run) and the message names the run and what to do.
func TestApplyClusterRefusesARunInProgress(t *testing.T) {
	r, c := clusterPlanRig(t, verifiedByAll)
	r.Rolling(t)
	c.Yes = true
	err := runApplyCluster(context.Background(), &ApplyOptions{Common: c, To: "4.11.0", Cluster: true, Roll: r.Deps})
	if cli.ExitCode(err) != cli.ExitNoGo || !strings.Contains(err.Error(), "20261128T010000Z-abc123 to 4.10.0, phase rolling") ||
		!strings.Contains(err.Error(), "finish or roll it back first") {
		t.Fatalf("apply --cluster during a roll: %v (exit %d)", err, cli.ExitCode(err))
	}
	deps, _ := c.Deps(context.Background())
	if ri, err := engine.Status(deps.Config.StateDir, ""); err == nil {
		t.Errorf("a refused apply journaled run %s (%s)", ri.ID, ri.Runbook.Name)
	}
	if r.Docs.Writes() != 2 { // the record's create and its phase rolling, by r.rolling
		t.Errorf("%d writes of the record, want none by the refused apply", r.Docs.Writes()-2)
	}
}
