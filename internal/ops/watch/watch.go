// Package watch is the post-upgrade watch window's judgement (--watch): the
// criteria and their thresholds, the window's journaled state, and the
// watcher that holds the stack against them once per interval (the
// indexer's cluster status, the alert rate against the pre-upgrade
// baseline, the agents active before, the units' restarts, the data-flow
// probe). The step kind watch.window (internal/steps) keeps the window: its
// start and state in the run's journal, the interval loop, the breach as a
// no-go.
package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/runbook"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/units"
)

// MaxWindow is the longest watch window (the watch step's timeout in the
// runbook leaves room for it).
const MaxWindow = 24 * time.Hour

// Request is what the operator asked for.
type Request struct {
	Window string `json:"window"` // time.Duration text, "20m0s"
}

// Watch criteria, as named in breaches and progress.
const (
	CritCluster = "cluster"
	CritAlerts  = "alert_rate"
	CritAgents  = "agents"
	CritUnits   = "unit_restarts"
	CritProbe   = "probe"
)

// BreachError is a watch criterion that breached its threshold. It is
// the cause inside the engine's GateError (and RolledBackError), so a
// caller that wants to ask instead of rolling back (guided mode) finds it
// with errors.As.
type BreachError struct {
	Criterion string
	Reason    string
	// Elapsed is how long the window had run; Remaining what was left.
	Elapsed   time.Duration
	Remaining time.Duration
}

func (e *BreachError) Error() string {
	return fmt.Sprintf("watch window breached after %s (%s left): %s: %s", e.Elapsed.Round(time.Second), e.Remaining.Round(time.Second), e.Criterion, e.Reason)
}

// State is the window's journaled state.
type State struct {
	Start  time.Time `json:"start"`
	Window string    `json:"window"`
	// AlertBaseline is alerts per minute before the upgrade (pre-upgrade
	// snapshot's last 5 minutes); 0: no baseline, the criterion only shows.
	AlertBaseline     float64             `json:"alert_baseline_per_min"`
	AlertBaselineFrom string              `json:"alert_baseline_from,omitempty"`
	Units             map[string]UnitMark `json:"units"`
	Last              map[string]string   `json:"last"`
	Intervals         int                 `json:"intervals"`
	// Judged: criterion → how many times it was held against its threshold
	// (a criterion only shown, e.g. before its lookback is past the upgrade,
	// is not judged).
	Judged  map[string]int  `json:"judged,omitempty"`
	Resumes int             `json:"resumes,omitempty"`
	Breach  *BreachEvidence `json:"breach,omitempty"`
}

// BreachEvidence is the breach as journaled.
type BreachEvidence struct {
	Criterion string `json:"criterion"`
	Reason    string `json:"reason"`
}

// UnitMark is a unit at the window's start.
type UnitMark struct {
	NRestarts   uint32    `json:"n_restarts"`
	ActiveSince time.Time `json:"active_since,omitzero"`
}

// Criteria are the window's criteria and their thresholds (the watch.window step's parameters).
type Criteria struct {
	Interval runbook.Duration `yaml:"interval"`
	// ClusterBreach is the cluster status that breaches (red, or yellow for
	// multi-node clusters that must stay green).
	ClusterBreach string `yaml:"cluster_breach"`
	// AlertRateMin: the alert rate over AlertRateOver below this share of
	// the baseline, AlertRateIntervals intervals in a row, breaches.
	AlertRateMin       float64          `yaml:"alert_rate_min"`
	AlertRateOver      runbook.Duration `yaml:"alert_rate_over"`
	AlertRateIntervals int              `yaml:"alert_rate_intervals"`
	// AgentsMinRatio of the agents active before, AgentsIntervals in a row.
	AgentsMinRatio  float64 `yaml:"agents_min_ratio"`
	AgentsIntervals int     `yaml:"agents_intervals"`
	// RestartsMax restarts of one unit in the window breach; a unit found
	// not active InactiveIntervals intervals in a row breaches too.
	RestartsMax       int `yaml:"restarts_max"`
	InactiveIntervals int `yaml:"inactive_intervals"`
	// ProbeEvery runs the data-flow probe (0: never); ProbeFailures
	// failures in a row breach.
	ProbeEvery    runbook.Duration `yaml:"probe_every"`
	ProbeFailures int              `yaml:"probe_failures"`
	// ProbeTimeout: a probe that has not seen its event indexed within it
	// fails (Filebeat tails an idle file with a backoff of up to 10 s, then
	// a bulk request and a refresh).
	ProbeTimeout runbook.Duration `yaml:"probe_timeout"`
}

func NewCriteria() *Criteria {
	return &Criteria{
		Interval:      runbook.Duration(30 * time.Second),
		ClusterBreach: "red",
		AlertRateMin:  0.1, AlertRateOver: runbook.Duration(5 * time.Minute), AlertRateIntervals: 3,
		AgentsMinRatio: 0.95, AgentsIntervals: 2,
		RestartsMax: 3, InactiveIntervals: 2,
		ProbeEvery: runbook.Duration(5 * time.Minute), ProbeFailures: 2, ProbeTimeout: runbook.Duration(30 * time.Second),
	}
}

func (p *Criteria) Validate() error {
	var errs []error
	if p.Interval.D() <= 0 {
		errs = append(errs, fmt.Errorf("interval %s: want a positive duration (e.g. 30s)", p.Interval.D()))
	}
	if p.ClusterBreach != "red" && p.ClusterBreach != "yellow" {
		errs = append(errs, fmt.Errorf("cluster_breach %q: want red or yellow", p.ClusterBreach))
	}
	if p.AlertRateMin < 0 || p.AlertRateMin >= 1 {
		errs = append(errs, fmt.Errorf("alert_rate_min %v: want a share of the baseline in [0, 1), e.g. 0.1", p.AlertRateMin))
	}
	if p.AlertRateOver.D() <= 0 {
		errs = append(errs, fmt.Errorf("alert_rate_over %s: want a positive duration, e.g. 5m", p.AlertRateOver.D()))
	}
	if p.AgentsMinRatio <= 0 || p.AgentsMinRatio > 1 {
		errs = append(errs, fmt.Errorf("agents_min_ratio %v: want a share in (0, 1], e.g. 0.95", p.AgentsMinRatio))
	}
	for name, n := range map[string]int{"alert_rate_intervals": p.AlertRateIntervals, "agents_intervals": p.AgentsIntervals,
		"restarts_max": p.RestartsMax, "inactive_intervals": p.InactiveIntervals, "probe_failures": p.ProbeFailures} {
		if n < 1 {
			errs = append(errs, fmt.Errorf("%s %d: want at least 1", name, n))
		}
	}
	if t := p.ProbeTimeout.D(); t < time.Second || t > 10*time.Minute {
		errs = append(errs, fmt.Errorf("probe_timeout %s: want 1s to 10m, e.g. 30s", t))
	}
	if p.ProbeEvery.D() < 0 {
		errs = append(errs, fmt.Errorf("probe_every %s: want 0 (off) or a positive duration", p.ProbeEvery.D()))
	}
	return errors.Join(errs...)
}

// Describe is what the window judges, for plans and --dry-run.
func (p *Criteria) Describe() []string {
	probe := "data-flow probe off"
	if p.ProbeEvery.D() > 0 {
		probe = fmt.Sprintf("data-flow probe at the window's start, every %s (at most a quarter of the window) and at its end, each given %s: %d failures in a row breach", p.ProbeEvery.D(), p.ProbeTimeout.D(), p.ProbeFailures)
	}
	return []string{
		fmt.Sprintf("only with --watch DURATION: judge the stack every %s until the window ends; a breach is no-go (rollback)", p.Interval.D()),
		fmt.Sprintf("indexer GET /_cluster/health: %s breaches", p.ClusterBreach),
		fmt.Sprintf("indexer POST <alerts>*/_count over the last %s: below %s of the pre-upgrade rate, %d intervals in a row, breaches (baseline > 0)", p.AlertRateOver.D(), pct(p.AlertRateMin), p.AlertRateIntervals),
		fmt.Sprintf("manager GET /agents: below %s of the agents active before, %d intervals in a row, breaches", pct(p.AgentsMinRatio), p.AgentsIntervals),
		fmt.Sprintf("systemd NRestarts/ActiveEnterTimestamp of every unit: %d restarts of one unit in the window, or not active %d intervals in a row, breach", p.RestartsMax, p.InactiveIntervals),
		probe,
		func() string {
			least, how := p.MinWindow()
			return fmt.Sprintf("a window shorter than %s is refused (%s); the outcome names every criterion it could not judge", least, how)
		}(),
	}
}

// Indexer is what the window asks the indexer (*indexer.Client).
type Indexer interface {
	Health(ctx context.Context, hr indexer.HealthRequest) (indexer.Health, error)
	Count(ctx context.Context, index, q string, since time.Time) (int64, error)
}

// Units is what the window asks systemd (*units.Manager).
type Units interface {
	Status(ctx context.Context, names ...string) ([]units.UnitStatus, error)
}

// Sources are what the window judges: each client or the reason it is
// missing, the units to watch, the alerts index pattern ("": no
// configuration, the alert rate is not judged), the data-flow probe (nil:
// none configured).
type Sources struct {
	Indexer     func() (Indexer, error)
	Manager     func() (fleet.Lister, error)
	Units       func(ctx context.Context) (Units, error)
	UnitNames   []string
	AlertsIndex string
	Probe       func(ctx context.Context) (probe.Report, error)
}

// Watcher judges the criteria once per interval; its counters live for
// one process (the window's start and baselines are journaled in State).
type Watcher struct {
	src    Sources
	p      *Criteria
	st     *State
	before []fleet.AgentRef
	hasRec bool

	lowAlerts, lowAgents, probeFails int
	lastProbe                        time.Time
	// cadence is how often the probe runs (probeCadence); final: this is
	// the judgement at the window's end (the last probe runs whatever the
	// cadence).
	cadence      time.Duration
	final        bool
	inactive     map[string]int
	seenSince    map[string]time.Time
	sinceChanges map[string]int
}

// New is the watcher of a window of the given length over src, against
// criteria p, keeping its judgements in st (st.Units and st.Last made when
// nil); before are the agents active before the upgrade, hasRecord false
// when none were recorded (the agents are then only shown).
func New(src Sources, p *Criteria, st *State, before []fleet.AgentRef, hasRecord bool, window time.Duration) *Watcher {
	if st.Units == nil {
		st.Units = map[string]UnitMark{}
	}
	if st.Last == nil {
		st.Last = map[string]string{}
	}
	return &Watcher{src: src, p: p, st: st, before: before, hasRec: hasRecord, inactive: map[string]int{}, seenSince: map[string]time.Time{},
		sinceChanges: map[string]int{}, cadence: p.probeCadence(window)}
}

// judged counts a criterion held against its threshold.
func (w *Watcher) judged(crit string) {
	if w.st.Judged == nil {
		w.st.Judged = map[string]int{}
	}
	w.st.Judged[crit]++
}

// breach is a criterion's verdict for one interval.
func (w *Watcher) breach(crit, format string, args ...any) *BreachError {
	return &BreachError{Criterion: crit, Reason: fmt.Sprintf(format, args...)}
}

// Judge holds the stack against every criterion at now (final: the
// window's end, when the last probe runs whatever the cadence) and returns
// the first breach; each criterion's last value is in State.Last.
func (w *Watcher) Judge(ctx context.Context, now time.Time, final bool) *BreachError {
	w.final = final
	for _, f := range []func(context.Context, time.Time) *BreachError{w.cluster, w.alerts, w.agents, w.units, w.probe} {
		if b := f(ctx, now); b != nil {
			return b
		}
	}
	return nil
}

func (w *Watcher) cluster(ctx context.Context, _ time.Time) *BreachError {
	ix, err := w.src.Indexer()
	if err == nil {
		var h indexer.Health
		if h, err = ix.Health(ctx, indexer.HealthRequest{}); err == nil {
			w.st.Last[CritCluster] = h.Status
			w.judged(CritCluster)
			if h.Status == "red" || h.Status == "yellow" && w.p.ClusterBreach == "yellow" {
				return w.breach(CritCluster, "cluster status %s (%d unassigned shards)", h.Status, h.UnassignedShards)
			}
			return nil
		}
	}
	w.st.Last[CritCluster] = "unknown: " + err.Error()
	return nil
}

func (w *Watcher) alerts(ctx context.Context, now time.Time) *BreachError {
	if w.st.AlertBaseline <= 0 {
		w.st.Last[CritAlerts] = "no pre-upgrade baseline (" + output.Dash(w.st.AlertBaselineFrom) + "): not judged"
		return nil
	}
	ix, err := w.src.Indexer()
	if err != nil || w.src.AlertsIndex == "" {
		w.st.Last[CritAlerts] = "unknown: no indexer client"
		return nil
	}
	over := w.p.AlertRateOver.D()
	n, err := ix.Count(ctx, w.src.AlertsIndex, "", now.Add(-over))
	if err != nil {
		w.st.Last[CritAlerts] = "unknown: " + err.Error()
		return nil
	}
	rate := float64(n) / over.Minutes()
	w.st.Last[CritAlerts] = fmt.Sprintf("%.1f/min (baseline %.1f/min)", rate, w.st.AlertBaseline)
	if now.Sub(w.st.Start) < over {
		// The lookback still reaches into the upgrade, when the manager was down.
		w.st.Last[CritAlerts] += fmt.Sprintf(", judged after %s of window", over)
		return nil
	}
	w.judged(CritAlerts)
	if rate >= w.p.AlertRateMin*w.st.AlertBaseline {
		w.lowAlerts = 0
		return nil
	}
	w.lowAlerts++
	if w.lowAlerts >= w.p.AlertRateIntervals {
		return w.breach(CritAlerts, "%.1f alerts/min over the last %s, below %s of the pre-upgrade %.1f/min for %d intervals in a row",
			rate, over, pct(w.p.AlertRateMin), w.st.AlertBaseline, w.lowAlerts)
	}
	return nil
}

func (w *Watcher) agents(ctx context.Context, now time.Time) *BreachError {
	if !w.hasRec || len(w.before) == 0 {
		w.st.Last[CritAgents] = "no agent active before: nothing to compare"
		if !w.hasRec {
			w.st.Last[CritAgents] = "no record of the agents before (" + rundata.KeyAgentsBefore + "): shown only"
		}
		return nil
	}
	mgr, err := w.src.Manager()
	if err != nil {
		w.st.Last[CritAgents] = "unknown: " + err.Error()
		return nil
	}
	res, err := fleet.CompareBack(ctx, mgr, w.before)
	if err != nil {
		w.st.Last[CritAgents] = "unknown: " + err.Error()
		return nil
	}
	w.st.Last[CritAgents] = fmt.Sprintf("%d/%d active (%s)", res.Back, res.Before, pct(res.Ratio()))
	w.judged(CritAgents)
	if res.Ratio() >= w.p.AgentsMinRatio {
		w.lowAgents = 0
		return nil
	}
	w.lowAgents++
	if w.lowAgents >= w.p.AgentsIntervals {
		return w.breach(CritAgents, "%d of %d agents active before are active (%s < %s) for %d intervals in a row; missing: %s",
			res.Back, res.Before, pct(res.Ratio()), pct(w.p.AgentsMinRatio), w.lowAgents, fleet.MissingLine(res.Missing, 10, now))
	}
	return nil
}

func (w *Watcher) units(ctx context.Context, _ time.Time) *BreachError {
	names := w.src.UnitNames
	u, err := w.src.Units(ctx)
	var sts []units.UnitStatus
	if err == nil {
		sts, err = u.Status(ctx, names...)
	}
	if err != nil {
		w.st.Last[CritUnits] = "unknown: " + err.Error()
		return nil
	}
	var parts []string
	var b *BreachError
	w.judged(CritUnits)
	for _, s := range sts {
		mark, ok := w.st.Units[s.Name]
		if !ok {
			mark = UnitMark{NRestarts: s.NRestarts, ActiveSince: s.ActiveSince}
			w.st.Units[s.Name] = mark
		}
		if seen, ok := w.seenSince[s.Name]; ok && !s.ActiveSince.IsZero() && !s.ActiveSince.Equal(seen) {
			w.sinceChanges[s.Name]++
		}
		if !s.ActiveSince.IsZero() {
			w.seenSince[s.Name] = s.ActiveSince
		}
		restarts := w.sinceChanges[s.Name]
		if s.NRestarts >= mark.NRestarts {
			restarts = max(restarts, int(s.NRestarts-mark.NRestarts))
		}
		if s.ActiveState == units.Active {
			w.inactive[s.Name] = 0
		} else {
			w.inactive[s.Name]++
		}
		parts = append(parts, fmt.Sprintf("%s %d", strings.TrimSuffix(s.Name, ".service"), restarts))
		switch {
		case b != nil:
		case restarts >= w.p.RestartsMax:
			b = w.breach(CritUnits, "%s restarted %d times in the window (at most %d allowed; now %s/%s)", s.Name, restarts, w.p.RestartsMax-1, s.ActiveState, s.SubState)
		case w.inactive[s.Name] >= w.p.InactiveIntervals:
			b = w.breach(CritUnits, "%s not active for %d intervals in a row (%s/%s, result %s)", s.Name, w.inactive[s.Name], s.ActiveState, s.SubState, output.Dash(s.Result))
		}
	}
	w.st.Last[CritUnits] = "restarts: " + strings.Join(parts, ", ")
	return b
}

func (w *Watcher) probe(ctx context.Context, now time.Time) *BreachError {
	every := w.cadence
	switch {
	case every <= 0:
		w.st.Last[CritProbe] = "off"
		return nil
	case w.src.Probe == nil:
		w.st.Last[CritProbe] = "no probe configured"
		return nil
	case !w.final && !w.lastProbe.IsZero() && now.Sub(w.lastProbe) < every:
		return nil
	}
	w.lastProbe = now
	// A stalled flow must not hold one probe for long: the window must
	// judge again.
	pctx, cancel := context.WithTimeout(ctx, w.p.ProbeTimeout.D())
	res, err := w.src.Probe(pctx)
	cancel()
	if ctx.Err() != nil {
		return nil
	}
	w.judged(CritProbe)
	switch {
	case err != nil:
		w.st.Last[CritProbe] = "failed: " + err.Error()
	case !res.OK:
		w.st.Last[CritProbe] = fmt.Sprintf("failed: %s broken at %s %s", res.Nonce, output.Dash(res.BrokenAt), res.Detail)
	default:
		w.probeFails = 0
		w.st.Last[CritProbe] = fmt.Sprintf("ok (%s) at %s", res.Latency().Round(time.Millisecond), now.UTC().Format(time.TimeOnly))
		return nil
	}
	w.probeFails++
	if w.probeFails >= w.p.ProbeFailures {
		return w.breach(CritProbe, "data-flow probe failed %d times in a row: %s", w.probeFails, w.st.Last[CritProbe])
	}
	return nil
}

// criteria are the criteria in the order they are judged and shown.
var criteria = []string{CritCluster, CritAlerts, CritAgents, CritUnits, CritProbe}

// notJudged names the criteria the window never held against their
// threshold (their last value says why).
func (st *State) NotJudged() []string {
	var out []string
	for _, k := range criteria {
		if st.Judged[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

// The data flow is judged at least FlowJudgements times in a window: the
// probe runs at the window's start, at least every quarter of it and at
// its end, so a stall that starts in the first quarter fails it twice
// before the end.
const FlowJudgements = 3

// probeCadence is how often the window probes: the runbook's probe_every,
// at most a quarter of the window (0: the probe is off).
func (p *Criteria) probeCadence(window time.Duration) time.Duration {
	every := p.ProbeEvery.D()
	if every <= 0 {
		return 0
	}
	return min(every, window/4)
}

// MinWindow is the shortest window that judges the data flow at least
// FlowJudgements times, and how: with the probe, a quarter of the window
// must hold an interval and a probe's wait; without it, the alert rate is
// judged once its lookback is past the upgrade, then every interval.
func (p *Criteria) MinWindow() (time.Duration, string) {
	if p.ProbeEvery.D() > 0 {
		q := max(p.Interval.D(), p.ProbeTimeout.D())
		return 4 * q, fmt.Sprintf("the data-flow probe runs at its start, every quarter of the window (a quarter holds at least the %s interval and the probe's %s timeout) and at its end", p.Interval.D(), p.ProbeTimeout.D())
	}
	return p.AlertRateOver.D() + time.Duration(FlowJudgements-1)*p.Interval.D(), fmt.Sprintf("with the probe off, the alert rate is judged after its %s lookback, then every %s interval", p.AlertRateOver.D(), p.Interval.D())
}

// Line is the live progress: each criterion's last value.
func (st *State) Line() string {
	parts := make([]string, 0, len(criteria))
	for _, k := range criteria {
		if v, ok := st.Last[k]; ok {
			parts = append(parts, k+" "+v)
		}
	}
	return strings.Join(parts, "; ")
}

// NewState is the state of a window of the given length starting at start.
func NewState(start time.Time, window time.Duration) *State {
	return &State{Start: start, Window: window.String(), Units: map[string]UnitMark{}, Last: map[string]string{}}
}

func pct(r float64) string {
	s := fmt.Sprintf("%.1f", r*100)
	return strings.TrimSuffix(s, ".0") + "%"
}
