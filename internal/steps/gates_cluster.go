package steps

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/services"
)

// --- gate.cluster_health ----------------------------------------------------

type healthParams struct {
	Status                string `yaml:"status"`
	WaitForNoRelocating   bool   `yaml:"wait_for_no_relocating"`
	WaitForNoInitializing bool   `yaml:"wait_for_no_initializing"`
	// timeout_per_primary: a node bringing its primaries back after a start needs longer
	primariesAllowance `yaml:",inline"`
}

func (p *healthParams) Describe(pc engine.PlanContext) []string {
	q := "wait_for_status=" + p.Status
	if p.WaitForNoRelocating {
		q += "&wait_for_no_relocating_shards=true"
	}
	if p.WaitForNoInitializing {
		q += "&wait_for_no_initializing_shards=true"
	}
	return p.describe([]string{"GET /_cluster/health?" + q + "&timeout=<≤30s> (server-side wait; 408 = not yet); red: GET /_cat/shards + GET /_cluster/allocation/explain of an unassigned primary"})
}

func (p *healthParams) Validate() error {
	if p.Status != "yellow" && p.Status != "green" {
		return fmt.Errorf("status %q: want yellow or green", p.Status)
	}
	return p.validate()
}

// serverWait is the longest server-side wait per request.
const serverWait = 30 * time.Second

func waitBudget(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return serverWait
	}
	w := time.Until(dl) - 2*time.Second
	return min(max(w, time.Second), serverWait)
}

// notAnswering judges a transport-level failure of component comp (what
// names its API) as unanswered does; other errors stay errors.
func notAnswering(ctx context.Context, d *Deps, comp, what string, err error) error {
	if !cluster.NotAnswering(err) {
		return err
	}
	return unanswered(ctx, d, comp, what, err)
}

// unanswered is a gate's verdict on component comp that did not answer
// (err): "not yet" while it may be starting, a no-go when its unit on this
// host is stopped or failed (downUnit).
func unanswered(ctx context.Context, d *Deps, comp, what string, err error) error {
	if down := downUnit(ctx, d, comp); down != "" {
		return engine.NoGo("%s not answering (%v): %s", what, err, down)
	}
	return engine.Pending("%s not answering: %v", what, err)
}

// downUnit is the verdict on a component that does not answer a gate: its
// unit on this host stopped or failed (services' Status.Down) will not
// answer however long the gate waits: the reason names the unit's state,
// the diagnosis of a failed one and the fix. "" while the unit runs or
// starts, where this host does not run the component and where its state
// cannot be read: the gate waits.
func downUnit(ctx context.Context, d *Deps, comp string) string {
	if d == nil || d.Config == nil || d.Units == nil {
		return ""
	}
	unit := d.Config.HostUnits()[comp]
	if unit == "" {
		return ""
	}
	u, err := d.units(ctx)
	if err != nil {
		return ""
	}
	c := services.Component{Name: comp, Unit: unit}
	sts, err := (&services.Runner{Units: u}).Status(ctx, []services.Component{c})
	if err != nil || len(sts) != 1 || !sts[0].Down() {
		return ""
	}
	s := sts[0]
	msg, fix := "its unit "+s.Describe()+" is not running", s.Fix()
	if s.Status.IsFailed() {
		msg += ": " + s.Status.Failure()
		if d.Diagnose != nil {
			if rep := d.Diagnose(ctx, c, s.Status); rep.Summary() != "" {
				msg += "; " + rep.Summary()
				fix = cmp.Or(rep.Fix(), fix)
			}
		}
	}
	return msg + "; fix: " + fix
}

func runClusterHealth(ctx context.Context, env Env, p *healthParams) (engine.Outcome, error) {
	d, ix, err := indexerOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	// A quick look first: red is judged at once, not after a server-side wait.
	h, err := ix.Health(ctx, indexer.HealthRequest{})
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "indexer", "indexer", err)
	}
	if h.Status == "red" {
		return engine.Outcome{}, judgeRed(ctx, ix, h)
	}
	env.Waiting("cluster %s, waiting server-side for %s", h.Status, p.Status)
	stop := watchRecovery(ctx, env, d, "recovery", "", true, nil)
	h, err = ix.Health(ctx, indexer.HealthRequest{WaitForStatus: p.Status, WaitForNoRelocatingShards: p.WaitForNoRelocating,
		WaitForNoInitializingShards: p.WaitForNoInitializing, Timeout: waitBudget(ctx)})
	stop()
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "indexer", "indexer", err)
	}
	if h.Status == "red" {
		return engine.Outcome{}, judgeRed(ctx, ix, h)
	}
	if h.TimedOut {
		return engine.Outcome{}, engine.Pending("cluster %s (want %s): %d initializing, %d relocating, %d unassigned shards",
			h.Status, p.Status, h.InitializingShards, h.RelocatingShards, h.UnassignedShards)
	}
	msg := fmt.Sprintf("cluster %s, %d nodes, %d active shards", h.Status, h.NumberOfNodes, h.ActiveShards)
	if h.Status == "yellow" && h.UnassignedShards > 0 {
		msg += fmt.Sprintf(", %d unassigned replica shards", h.UnassignedShards)
		if v := cluster.Status(h); v.Level == cluster.OK {
			msg += " (a single node cannot hold replicas)"
		}
	}
	return engine.Outcome{Message: msg, Data: map[string]any{"status": h.Status}}, nil
}

// judgeRed: a red cluster whose unassigned primaries cannot be allocated is
// a no-go (with the reason); one still recovering is "not yet".
func judgeRed(ctx context.Context, ix IndexerAPI, h indexer.Health) error {
	v := cluster.Red(ctx, ix, h)
	if v.Level == cluster.NoGo {
		return engine.NoGo("%s", v.Summary)
	}
	return engine.Pending("%s", v.Summary)
}
