package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/rundata"
)

// The rolling upgrade's coordination record (internal/ops/rollout: one document in the indexer,
// written with optimistic concurrency) as runbook steps: cluster-apply.yaml creates it and opens
// the turns (phase rolling); cluster-finish.yaml waits for every entry done and closes it.

// KeyRoll is the run data key of the roll's summary (rollout.Summary), journaled when the run's
// record is closed.
const KeyRoll = "roll"

// rolloutStore is the record's store over this host's indexer client.
func rolloutStore(d *Deps) (*rollout.Store, error) {
	ix, err := d.indexer()
	if err != nil {
		return nil, err
	}
	api, err := clientset.As[rollout.API](d.Indexer).Need("indexer")
	if err != nil {
		return nil, err
	}
	// When this host's node does not answer (its own turn, or the node that did not rejoin), the
	// record is reached through the other nodes, as the cluster verbs do.
	s := rollout.NewStore(rollout.Over(api, d.Config.StateDir))
	if c, ok := ix.(rollout.IndexerFacts); ok {
		s.Elected = c.ClusterManager
	}
	return s, nil
}

type rolloutPhaseParams struct {
	From []string `yaml:"from"`
	To   string   `yaml:"to"`
}

func (p *rolloutPhaseParams) Describe(engine.PlanContext) []string {
	_, _, write := rollout.Calls()
	return []string{fmt.Sprintf("%s: phase %s → %s (this run's record only)", write, strings.Join(p.From, "|"), p.To)}
}

func (p *rolloutPhaseParams) Validate() error {
	for _, ph := range append(slices.Clone(p.From), p.To) {
		if !slices.Contains(rollout.Phases, rollout.Phase(ph)) {
			return fmt.Errorf("phase %q: want one of %v", ph, rollout.Phases)
		}
	}
	if p.To == "" {
		return errors.New("to: the phase to move the run to is required")
	}
	return nil
}

func rolloutKinds() []Kind {
	create, read, _ := rollout.Calls()
	return []Kind{
		engine.Define(Spec[*noParams]{Name: "rollout.create", Run: runRolloutCreate,
			New: simple(func(*Planning) []string {
				return append(append(slices.Clone(rollout.FactCalls), create...),
					"the order: indexer nodes one at a time (the elected cluster manager last), the manager master, the workers, the dashboards; every entry pending, phase apply")
			}),
			Skip: func(ctx context.Context, env Env, _ *noParams) (string, bool, error) {
				s, err := rolloutStore(env.Deps())
				if err != nil {
					return "", false, err
				}
				r, err := s.Load(ctx)
				if errors.Is(err, rollout.ErrNoRun) || err == nil && r.RunID != env.RunID() {
					return "", false, nil
				}
				if err != nil {
					return "", false, err
				}
				return fmt.Sprintf("the record of run %s is already in the cluster (phase %s)", r.RunID, r.Phase), true, nil
			}}),
		engine.Define(Spec[*rolloutPhaseParams]{Name: "rollout.phase", New: func() *rolloutPhaseParams { return &rolloutPhaseParams{} },
			Run: runRolloutPhase,
			Skip: func(ctx context.Context, env Env, p *rolloutPhaseParams) (string, bool, error) {
				s, err := rolloutStore(env.Deps())
				if err != nil {
					return "", false, err
				}
				r, err := s.Load(ctx)
				if err != nil {
					return "", false, err
				}
				if string(r.Phase) == p.To {
					return "run " + r.RunID + " is already " + p.To, true, nil
				}
				return "", false, nil
			}}),
		engine.Define(Spec[*noParams]{Name: "gate.rollout_done", ReadOnly: true, Run: runGateRolloutDone,
			New: simple(func(*Planning) []string {
				return []string{read + ": every entry of the order done (phase finish)"}
			})}),
	}
}

func runRolloutCreate(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	s, err := rolloutStore(d)
	if err != nil {
		return engine.Outcome{}, err
	}
	facts, err := clientset.As[rollout.IndexerFacts](d.Indexer).Need("indexer")
	if err != nil {
		return engine.Outcome{}, err
	}
	var mg rollout.ManagerFacts
	m, mErr := d.manager()
	if mErr == nil {
		if mf, ok := m.(rollout.ManagerFacts); ok {
			mg = mf
		}
	}
	f, err := rollout.Gather(ctx, d.Config, facts, mg, mErr)
	if err != nil {
		return engine.Outcome{}, err
	}
	var target string
	if _, err := env.Get(rundata.KeyTarget, &target); err != nil {
		return engine.Outcome{}, err
	}
	from := ""
	if pm, perr := d.packages(); len(f.IndexerNodes) > 0 && perr == nil {
		if inst, err := packages.ByComponent(ctx, pm, d.Config.HostPackageNames()); err == nil {
			for _, c := range d.Config.HostComponents() {
				if v := packages.Upstream(inst[c]); v != "" {
					from = v
					break
				}
			}
		}
	}
	host, _ := os.Hostname()
	r, err := rollout.NewRecord(env.RunID(), from, target, host, f)
	if err != nil {
		return engine.Outcome{}, err
	}
	r, err = s.Create(ctx, r)
	if err != nil {
		return engine.Outcome{}, err
	}
	names := make([]string, len(r.Order))
	for i, e := range r.Order {
		names[i] = e.Name
	}
	return engine.Outcome{Message: fmt.Sprintf("rollout record of run %s created: %s → %s, order %s", r.RunID, from, target, strings.Join(names, ", ")),
		Data: map[string]any{"order": names}}, nil
}

func runRolloutPhase(ctx context.Context, env Env, p *rolloutPhaseParams) (engine.Outcome, error) {
	s, err := rolloutStore(env.Deps())
	if err != nil {
		return engine.Outcome{}, err
	}
	from := make([]rollout.Phase, len(p.From))
	for i, ph := range p.From {
		from[i] = rollout.Phase(ph)
	}
	r, err := s.Load(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	r, err = s.SetPhase(ctx, r.RunID, from, rollout.Phase(p.To), "siemctl "+env.StepID())
	if err != nil {
		return engine.Outcome{}, err
	}
	if r.Phase.Ended() {
		// The evidence of the whole roll: the run's report shows it (RunReport.Roll).
		sum := r.Summarize(env.Deps().now())
		if err := env.Set(KeyRoll, sum); err != nil {
			return engine.Outcome{}, err
		}
		return engine.Outcome{Message: fmt.Sprintf("run %s is %s; %s", r.RunID, r.Phase, sum.Line())}, nil
	}
	return engine.Outcome{Message: fmt.Sprintf("run %s is %s", r.RunID, r.Phase)}, nil
}

func runGateRolloutDone(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	s, err := rolloutStore(env.Deps())
	if err != nil {
		return engine.Outcome{}, err
	}
	r, err := s.Load(ctx)
	if err != nil {
		return engine.Outcome{}, engine.NoGo("%v: run siemctl upgrade apply --cluster first", err)
	}
	var left []string
	for _, e := range r.Order {
		if e.State != rollout.Done {
			left = append(left, e.Name+" "+string(e.State))
		}
	}
	if len(left) > 0 {
		return engine.Outcome{}, engine.NoGo("run %s is %s, entries not done: %s (siemctl upgrade node on each of them, in the order; siemctl upgrade status --cluster)", r.RunID, r.Phase, strings.Join(left, ", "))
	}
	return engine.Outcome{Message: fmt.Sprintf("run %s: every entry of the order done (%d)", r.RunID, len(r.Order)), Data: map[string]any{"run_id": r.RunID}}, nil
}
