package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/ops/watch"
	"github.com/siemctl/siemctl/internal/rundata"
)

// watch.window: the window after validation (--watch), judged by
// internal/ops/watch; the kind keeps its start and state in the run's
// journal, waits out the intervals and turns a breach into a no-go.

// watchParams are the window's criteria and thresholds.
type watchParams struct {
	watch.Criteria `yaml:",inline"`
}

func (p *watchParams) Describe(engine.PlanContext) []string { return p.Criteria.Describe() }

// watchWindow reads the requested window; ok=false without --watch.
func watchWindow(env Env) (time.Duration, bool, error) {
	var req watch.Request
	ok, err := env.Get(rundata.KeyWatch, &req)
	if err != nil || !ok || req.Window == "" {
		return 0, false, err
	}
	w, err := time.ParseDuration(req.Window)
	if err != nil {
		return 0, false, fmt.Errorf("run data %s: window %q: %w", rundata.KeyWatch, req.Window, err)
	}
	return w, w > 0, nil
}

func skipWatch(_ context.Context, env Env, _ *watchParams) (string, bool, error) {
	_, ok, err := watchWindow(env)
	if err != nil || ok {
		return "", false, err
	}
	return "no --watch given: the stack is not watched after validation", true, nil
}

// alertBaseline is the pre-upgrade snapshot's alerts per minute.
func alertBaseline(env Env, d *Deps) (float64, string) {
	snaps := map[string]string{}
	if _, err := env.Get(rundata.KeySnapshots, &snaps); err != nil || snaps["pre-upgrade"] == "" || d.Snapshots == nil {
		return 0, ""
	}
	doc, err := d.Snapshots.Get(snaps["pre-upgrade"])
	if err != nil || !doc.Alerts.Reachable {
		return 0, "snapshot " + snaps["pre-upgrade"] + " has no alert count"
	}
	return float64(doc.Alerts.Last5m) / 5, "snapshot " + snaps["pre-upgrade"] + ": " + fmt.Sprint(doc.Alerts.Last5m) + " alerts in its last 5 minutes"
}

func runWatch(ctx context.Context, env Env, p *watchParams) (engine.Outcome, error) {
	d := env.Deps()
	window, ok, err := watchWindow(env)
	if err != nil || !ok {
		return engine.Outcome{Message: "no --watch given"}, err
	}
	st := &watch.State{}
	found, err := env.Get(rundata.KeyWatchState, st)
	if err != nil {
		return engine.Outcome{}, err
	}
	if !found || st.Start.IsZero() {
		st = watch.NewState(d.now().UTC(), window)
		st.AlertBaseline, st.AlertBaselineFrom = alertBaseline(env, d)
		// Journal the start before the first judgement (which may take a
		// probe's time): a crash from here on resumes this window.
		if err := env.Set(rundata.KeyWatchState, st); err != nil {
			return engine.Outcome{}, err
		}
	} else {
		st.Resumes++
	}
	st.Last = map[string]string{}
	end := st.Start.Add(window)
	if dl, ok := ctx.Deadline(); ok && dl.Before(end) {
		return engine.Outcome{}, fmt.Errorf("the step's timeout ends at %s, before the %s watch window (raise the runbook step's timeout)", dl.UTC().Format(time.RFC3339), window)
	}
	var before fleet.AgentsBefore
	hasRec, err := env.Get(rundata.KeyAgentsBefore, &before)
	if err != nil {
		return engine.Outcome{}, err
	}
	w := watch.New(watchSources(d), &p.Criteria, st, before.Active, hasRec, window)
	for {
		now := d.now()
		b := w.Judge(ctx, now, !now.Before(end))
		if ctx.Err() != nil {
			return engine.Outcome{}, ctx.Err()
		}
		st.Intervals++
		if b != nil {
			b.Elapsed, b.Remaining = now.Sub(st.Start), max(end.Sub(now), 0)
			st.Breach = &watch.BreachEvidence{Criterion: b.Criterion, Reason: b.Reason}
		}
		if err := env.Set(rundata.KeyWatchState, st); err != nil {
			return engine.Outcome{}, err
		}
		if b != nil {
			return engine.Outcome{}, &engine.GateError{Reason: b.Error(), Err: b}
		}
		left := end.Sub(now)
		if left <= 0 {
			msg := fmt.Sprintf("watched %s (%d intervals, data flow probed %d times): no breach", window, st.Intervals, st.Judged[watch.CritProbe])
			if nj := st.NotJudged(); len(nj) > 0 {
				msg += "; not judged: " + strings.Join(nj, ", ")
			}
			return engine.Outcome{Message: msg + "; " + st.Line()}, nil
		}
		env.Waiting("watch window %s left of %s; %s", left.Round(time.Second), window, st.Line())
		t := time.NewTimer(min(p.Interval.D(), left))
		select {
		case <-ctx.Done():
			t.Stop()
			return engine.Outcome{}, ctx.Err()
		case <-t.C:
		}
	}
}

func watchKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*watchParams]{Name: "watch.window", Estimate: estimateWatch, ReadOnly: true, Run: runWatch, Skip: skipWatch,
			New: func() *watchParams { return &watchParams{Criteria: *watch.NewCriteria()} }}),
	}
}

// RequestWatch seeds a run of plan with a watch window; the plan must
// select a watch.window step.
func RequestWatch(plan *Plan, seed map[string]any, window time.Duration) error {
	for _, s := range plan.Selected() {
		if s.Step.Kind == "watch.window" {
			if p, ok := s.Params.(*watchParams); ok {
				if least, how := p.MinWindow(); window < least {
					return fmt.Errorf("--watch %s is too short to judge the data flow %d times (%s): give at least --watch %s", window, watch.FlowJudgements, how, least)
				}
			}
			seed[rundata.KeyWatch] = watch.Request{Window: window.String()}
			return nil
		}
	}
	return fmt.Errorf("--watch %s: the runbook selects no watch.window step (is watch/window skipped?)", window)
}

// WatchOf is the watch window a run's seed requests (0: none).
func WatchOf(seed map[string]any) time.Duration {
	req, ok := seed[rundata.KeyWatch].(watch.Request)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(req.Window)
	if err != nil {
		return 0
	}
	return d
}

// watchSources are the window's clients and configuration from d.
func watchSources(d *Deps) watch.Sources {
	src := watch.Sources{
		Indexer: func() (watch.Indexer, error) { return d.indexer() },
		Manager: func() (fleet.Lister, error) { return d.manager() },
		Units:   func(ctx context.Context) (watch.Units, error) { return d.units(ctx) },
		Probe:   d.Probe,
	}
	if d.Config != nil {
		src.AlertsIndex = d.Config.Indexer.AlertsIndexPrefix + "*"
		m := d.Config.Units()
		for _, c := range Components {
			if m[c] != "" {
				src.UnitNames = append(src.UnitNames, m[c])
			}
		}
	}
	return src
}
