// Package services is the unit operations floor: it starts, stops,
// restarts and enables the stack's systemd units in dependency order with
// bounded waits: start indexer, manager, dashboard, shipper (waiting up to
// 60 s, 30 s, 60 s and 30 s, or a per-call limit), stop in reverse,
// restart-all in start order. A stop is proven by the unit's control group
// being empty (the manager forks many daemons, Stopped) and a unit left
// failed is reset; a failure is explained with systemd's Result and the
// unit's last log lines. Options cover what callers differ in: SkipDone
// (the runbook leaves a unit already in the wanted state alone), Ready (a
// start, or AwaitReady after one, waits for the service to answer; a unit
// that dies meanwhile ends the wait), Waiting (progress).
//
// It also holds the "units inactive" verdict (Judge, Inactive, Status.Down,
// Status.Fix, Status.Describe). Doors: `siemctl services` (internal/cmd/services), the
// runbook kinds units.* and gate.units_active (internal/steps), the health
// check "units" (internal/health), `indexer repository prepare`.
package services

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/units"
)

// StartOrder is the start order (each component needs the one before);
// stop uses its reverse.
var StartOrder = []string{"indexer", "manager", "dashboard", "shipper"}

// Defaults of a Runner.
const (
	DefaultProcessWait = 10 * time.Second
	DefaultProcessPoll = 200 * time.Millisecond
	DefaultLogLines    = 10
)

// ErrUnknownComponent is a component name that is not one of StartOrder.
var ErrUnknownComponent = errors.New("unknown component")

// ErrNotOnHost is a component this host does not run (config components).
var ErrNotOnHost = errors.New("not on this host")

// Component is a stack component and its unit.
type Component struct {
	Name string        `json:"component"`
	Unit string        `json:"unit"`
	Wait time.Duration `json:"-"`
}

// Select resolves component names ("all" or none: every component of the
// map, this host's: config.HostUnits) against the component → unit map,
// returning them in start order without duplicates; a component the map
// does not have is not on this host, an error. all reports whether every
// component of the stack was selected.
func Select(unitMap map[string]string, names []string) (comps []Component, all bool, err error) {
	want := map[string]bool{}
	if len(names) == 0 {
		names = []string{"all"}
	}
	var bad, notHere []string
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		switch {
		case n == "all":
			for _, c := range StartOrder {
				_, here := unitMap[c]
				want[c] = here
			}
		case slices.Contains(StartOrder, n):
			if _, here := unitMap[n]; !here {
				notHere = append(notHere, n)
			}
			want[n] = true
		default:
			bad = append(bad, fmt.Sprintf("%q", n))
		}
	}
	if len(bad) > 0 {
		return nil, false, fmt.Errorf("%w %s: use %s or all", ErrUnknownComponent, strings.Join(bad, ", "), strings.Join(StartOrder, ", "))
	}
	if len(notHere) > 0 {
		var here []string
		for _, c := range StartOrder {
			if _, ok := unitMap[c]; ok {
				here = append(here, c)
			}
		}
		return nil, false, fmt.Errorf("%s %w: it runs %s (the components key of its config); act on the host that runs it", strings.Join(notHere, ", "), ErrNotOnHost, strings.Join(here, ", "))
	}
	for _, n := range StartOrder {
		if !want[n] {
			continue
		}
		u := unitMap[n]
		if u == "" {
			return nil, false, fmt.Errorf("component %s has no unit configured (%s.unit)", n, n)
		}
		comps = append(comps, Component{Name: n, Unit: units.Normalize(u), Wait: config.DefaultStartWaits[n]})
	}
	return comps, len(comps) == len(StartOrder), nil
}

// Units is what the runner needs from systemd (*units.Manager).
type Units interface {
	Status(ctx context.Context, units ...string) ([]units.UnitStatus, error)
	StartAndWait(ctx context.Context, unit string, timeout time.Duration) (units.UnitStatus, error)
	RestartAndWait(ctx context.Context, unit string, timeout time.Duration) (units.UnitStatus, error)
	Stop(ctx context.Context, unit string) error
	Wait(ctx context.Context, unit string, want []string, timeout time.Duration) (units.UnitStatus, error)
	Processes(ctx context.Context, unit string) ([]int, error)
	ResetFailed(ctx context.Context, unit string) error
	Enable(ctx context.Context, units ...string) ([]units.UnitFileChange, error)
}

// Results of one action on one component.
const (
	ResultDone    = "done"
	ResultFailed  = "failed"
	ResultSkipped = "skipped" // an earlier component failed
)

// Outcome is what happened to one component.
type Outcome struct {
	Component string        `json:"component"`
	Unit      string        `json:"unit"`
	Action    string        `json:"action"` // start | stop | restart
	Result    string        `json:"result"` // done | failed | skipped
	State     string        `json:"state"`  // active/running, inactive/dead, …
	MainPID   uint32        `json:"main_pid"`
	Took      time.Duration `json:"-"`
	TookMS    int64         `json:"took_ms"`
	// Failure is systemd's Result and exit status ("exit-code (exit status 1)").
	Failure string `json:"failure,omitempty"`
	Error   string `json:"error,omitempty"`
	// Already: the unit was in the wanted state, nothing was done
	// (Runner.SkipDone).
	Already bool `json:"already,omitempty"`
	// LogLines are the unit's last log lines when it failed.
	LogLines []string `json:"log_lines,omitempty"`
	// Diagnosis is why it failed: cause, evidence, fix (Runner.Diagnose).
	Diagnosis *diagnose.Report `json:"diagnosis,omitempty"`
	// Leftover are PIDs still in the unit's control group after a stop.
	Leftover []int `json:"leftover_pids,omitempty"`
}

// ActionError is an action that failed on one component; the rest of the
// sequence was skipped.
type ActionError struct {
	Action    string
	Component string
	Unit      string
	Err       error
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("%s %s (%s): %v", e.Action, e.Component, e.Unit, e.Err)
}

func (e *ActionError) Unwrap() error { return e.Err }

// ErrProcessesLeft: a stopped unit still has processes in its control group.
var ErrProcessesLeft = errors.New("processes still running after stop")

// Runner runs ordered actions.
type Runner struct {
	Units Units
	// LogLines returns a unit's last log lines (default units.LastLogLines).
	LogLines func(ctx context.Context, st units.UnitStatus, n int) ([]string, error)
	// Progress, when set, is called before each component's action
	// ("starting indexer (wait up to 60s)") and with its outcome.
	Progress func(o Outcome, finished bool)
	// ProcessWait bounds the wait for a stopped unit's processes to go
	// (default 10 s); ProcessPoll is the pause between looks (default 200 ms).
	ProcessWait time.Duration
	ProcessPoll time.Duration
	// Sleep waits d or until ctx ends (tests replace it).
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for Took (default time.Now).
	Now func() time.Time
	// Waits overrides the wait limits (the config's start_wait keys,
	// config.StartWaits; tests); missing keys use the component's Wait (a
	// runbook step's per-call limit), then Waits.
	Waits map[string]time.Duration
	// SkipDone leaves a unit already in the wanted state alone (start:
	// active; stop: inactive or failed with no process left) and reports it
	// as Already: a runbook step that runs again on --resume changes nothing.
	SkipDone bool
	// Waiting, when set, is told what a wait is for ("processes of X to
	// exit") each time the runner looks again.
	Waiting func(format string, args ...any)
	// Ready, when set, is asked after a start or restart, every
	// ProcessPoll, until it returns nil or the component's wait passes:
	// the service answers, not only its process runs (the indexer's HTTP
	// after `indexer repository prepare` restarts it).
	Ready func(ctx context.Context, c Component) error
	// Diagnose, when set, explains a unit that failed to start or answer
	// (the diagnosis operation, internal/ops/diagnose).
	Diagnose func(ctx context.Context, c Component, st units.UnitStatus) diagnose.Report
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	return netclient.Sleep(ctx, d)
}

func (r *Runner) wait(c Component) time.Duration {
	if d, ok := r.Waits[c.Name]; ok {
		return d
	}
	if c.Wait > 0 {
		return c.Wait
	}
	return config.DefaultStartWaits[c.Name]
}

func stateOf(st units.UnitStatus) string {
	if st.ActiveState == "" {
		return ""
	}
	return st.ActiveState + "/" + st.SubState
}

// Start starts comps in start order, each waited for up to its limit.
func (r *Runner) Start(ctx context.Context, comps []Component) ([]Outcome, error) {
	return r.sequence(ctx, "start", inStartOrder(comps), r.startOne)
}

// Restart restarts comps in start order (restart-all).
func (r *Runner) Restart(ctx context.Context, comps []Component) ([]Outcome, error) {
	return r.sequence(ctx, "restart", inStartOrder(comps), r.restartOne)
}

// Stop stops comps in reverse start order and verifies each unit's
// processes are gone.
func (r *Runner) Stop(ctx context.Context, comps []Component) ([]Outcome, error) {
	ordered := inStartOrder(comps)
	slices.Reverse(ordered)
	return r.sequence(ctx, "stop", ordered, r.stopOne)
}

// Calls describes the unit jobs Start, Stop, Restart or Enable would run
// for comps, in their order (dry runs).
func (r *Runner) Calls(action string, comps []Component) []string {
	ordered := inStartOrder(comps)
	var out []string
	switch action {
	case "enable":
		names := make([]string, len(ordered))
		for i, c := range ordered {
			names[i] = c.Unit
		}
		return []string{"systemd EnableUnitFiles " + strings.Join(names, " ") + ", then Reload if links changed"}
	case "stop":
		slices.Reverse(ordered)
		for _, c := range ordered {
			out = append(out, fmt.Sprintf("systemd StopUnit %s (replace), wait up to %s for inactive and its processes gone", c.Unit, r.wait(c)))
		}
	default:
		job := "StartUnit"
		if action == "restart" {
			job = "RestartUnit"
		}
		for _, c := range ordered {
			out = append(out, fmt.Sprintf("systemd %s %s (replace), wait up to %s for active", job, c.Unit, r.wait(c)))
		}
	}
	return out
}

func inStartOrder(comps []Component) []Component {
	out := slices.Clone(comps)
	slices.SortStableFunc(out, func(a, b Component) int {
		return slices.Index(StartOrder, a.Name) - slices.Index(StartOrder, b.Name)
	})
	return out
}

type stepFunc func(ctx context.Context, c Component, o *Outcome) error

func (r *Runner) sequence(ctx context.Context, action string, comps []Component, step stepFunc) ([]Outcome, error) {
	out := make([]Outcome, 0, len(comps))
	var failed error
	for _, c := range comps {
		o := Outcome{Component: c.Name, Unit: c.Unit, Action: action}
		if failed != nil {
			o.Result = ResultSkipped
			out = append(out, o)
			continue
		}
		if r.Progress != nil {
			r.Progress(o, false)
		}
		start := r.now()
		err := step(ctx, c, &o)
		o.Took = r.now().Sub(start)
		o.TookMS = o.Took.Milliseconds()
		if err != nil {
			o.Result = ResultFailed
			o.Error = err.Error()
			var re *RefusedError
			if ctx.Err() == nil {
				r.explain(ctx, c, &o, !errors.As(err, &re))
			}
			if re != nil {
				o.Diagnosis = &diagnose.Report{Component: c.Name, Unit: c.Unit, State: o.State, Sources: []string{"readiness probe"},
					Findings: []diagnose.Finding{{Kind: diagnose.KindRefused, Cause: re.Cause, Evidence: append([]string{}, re.Evidence...), Fix: re.Fix}}}
			}
			if o.Diagnosis != nil && o.Diagnosis.Summary() != "" {
				var na *NotAnsweringError
				if errors.As(err, &na) && o.Diagnosis.Cause().Kind != diagnose.KindStillStarting {
					na.Explained = true
				}
				err = &DiagnosedError{Err: err, Report: *o.Diagnosis}
			}
			failed = &ActionError{Action: action, Component: c.Name, Unit: c.Unit, Err: err}
		} else {
			o.Result = ResultDone
		}
		if r.Progress != nil {
			r.Progress(o, true)
		}
		out = append(out, o)
	}
	return out, failed
}

// explain adds the unit's Result, last log lines and (Diagnose) the
// diagnosis to a failed outcome.
func (r *Runner) explain(ctx context.Context, c Component, o *Outcome, diagnose bool) {
	sts, err := r.Units.Status(ctx, o.Unit)
	if err != nil || len(sts) == 0 {
		return
	}
	st := sts[0]
	o.State = stateOf(st)
	if o.Failure == "" && (st.IsFailed() || (st.Result != "" && st.Result != "success")) {
		o.Failure = st.Failure()
	}
	logf := r.LogLines
	if logf == nil {
		logf = units.LastLogLines
	}
	if lines, err := logf(ctx, st, DefaultLogLines); err == nil {
		o.LogLines = lines
	} else {
		o.LogLines = []string{"(log unavailable: " + err.Error() + ")"}
	}
	if diagnose && r.Diagnose != nil && o.Action != "stop" {
		rep := r.Diagnose(ctx, c, st)
		o.Diagnosis = &rep
	}
}

// DiagnosedError is a start that failed with its diagnosis: the error
// says the cause and the fix, and is also its cause's class (the report's
// Err: diagnose.ErrAccessDenied, diagnose.ErrConfigMismatch).
type DiagnosedError struct {
	Err    error
	Report diagnose.Report
}

func (e *DiagnosedError) Error() string {
	msg := e.Err.Error()
	if s := e.Report.Summary(); !strings.HasSuffix(msg, s) {
		msg += ": " + s
	}
	if f := e.Report.Fix(); f != "" {
		msg += "; fix: " + f
	}
	return msg
}

func (e *DiagnosedError) Unwrap() []error {
	if class := e.Report.Err(); class != nil {
		return []error{e.Err, class}
	}
	return []error{e.Err}
}

func (r *Runner) startOne(ctx context.Context, c Component, o *Outcome) error {
	return r.startJob(ctx, c, o, r.Units.StartAndWait, r.SkipDone)
}

func (r *Runner) restartOne(ctx context.Context, c Component, o *Outcome) error {
	return r.startJob(ctx, c, o, r.Units.RestartAndWait, false)
}

// startJob runs a start or restart job and waits for the unit to be active.
// A failed unit is reset first: its failure (and a start limit hit by
// earlier crashes) would otherwise refuse or colour the new start.
func (r *Runner) startJob(ctx context.Context, c Component, o *Outcome, job func(context.Context, string, time.Duration) (units.UnitStatus, error), skipActive bool) error {
	if skipActive {
		sts, err := r.Units.Status(ctx, c.Unit)
		if err != nil {
			return err
		}
		if len(sts) == 1 && sts[0].IsActive() {
			o.State, o.MainPID, o.Already = stateOf(sts[0]), sts[0].MainPID, true
			return nil
		}
	}
	if err := r.Units.ResetFailed(ctx, c.Unit); err != nil {
		return fmt.Errorf("reset-failed: %w", err)
	}
	st, err := job(ctx, c.Unit, r.wait(c))
	o.State, o.MainPID = stateOf(st), st.MainPID
	if err != nil {
		if st.IsFailed() {
			o.Failure = st.Failure()
		}
		if errors.Is(err, units.ErrWaitTimeout) && st.ActiveState == units.Activating {
			// still coming up (a slow ExecStartPre, a loaded host): slow until
			// the diagnosis names a cause
			return &NotAnsweringError{Unit: c.Unit, Wait: r.wait(c), Err: err, NotActive: true}
		}
		return waitErr(err, r.wait(c))
	}
	if r.Ready != nil {
		return r.ready(ctx, c)
	}
	return nil
}

// AwaitReady waits, as a start does, for the service of a unit started
// earlier to answer: it asks Ready until it answers nil or the component's
// wait passes, and fails at once when the unit is seen failed or stopped
// (a runbook step waiting for the indexer an earlier step started).
func (r *Runner) AwaitReady(ctx context.Context, c Component) error {
	if r.Ready == nil {
		return errors.New("services: AwaitReady needs Ready")
	}
	return r.ready(ctx, c)
}

// ready asks Ready until it answers nil or the component's wait passes; a
// unit that died meanwhile ends the wait with systemd's reason.
func (r *Runner) ready(ctx context.Context, c Component) error {
	rctx, cancel := context.WithTimeout(ctx, r.wait(c))
	defer cancel()
	poll := cmp.Or(r.ProcessPoll, DefaultProcessPoll)
	for {
		err := r.Ready(rctx, c)
		if err == nil {
			return nil
		}
		sts, serr := r.Units.Status(rctx, c.Unit)
		if serr != nil && rctx.Err() == nil {
			return serr
		}
		if len(sts) == 1 && (sts[0].IsFailed() || sts[0].ActiveState == units.Inactive || sts[0].SubState == "auto-restart") {
			return fmt.Errorf("%s is not running (%s); its log says why", c.Unit, sts[0].Failure())
		}
		if errors.Is(err, ErrRefused) {
			// an answer that waiting does not change: the cause is named
			return err
		}
		if errors.Is(err, ErrNotItself) && len(sts) == 1 {
			// something answers on its address, not the component: a foreign
			// holder of its port fails the start at once
			if ferr := r.foreignAnswer(ctx, c, sts[0], err); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, netclient.ErrTLS) && len(sts) == 1 {
			// it answers, with a certificate siemctl refuses: ready, unless the
			// certificate is the component's fault (expired, from a foreign CA, not
			// its key's), which its own clients refuse too
			return r.certificateRefused(ctx, c, sts[0], err)
		}
		if r.Waiting != nil {
			r.Waiting("%s to answer", c.Unit)
		}
		if serr := r.sleep(rctx, poll); serr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &NotAnsweringError{Unit: c.Unit, Wait: r.wait(c), Err: err}
		}
	}
}

// ErrStillStarting is a unit that runs (active or activating) but whose
// service did not answer within the start wait, and no cause was found: it
// is slow, not failed (exit 8, "still starting").
var ErrStillStarting = errors.New("still starting")

// NotAnsweringError is a unit whose service did not answer within the
// wait. It is ErrStillStarting until a diagnosis names a cause (Explained):
// a start that will fail is a failure, not a slow start.
type NotAnsweringError struct {
	Unit string
	Wait time.Duration
	Err  error // the readiness probe's last answer, or the unit wait's
	// NotActive: the unit itself was still activating (systemd's start job
	// had not finished), not only its service silent.
	NotActive bool
	Explained bool
}

func (e *NotAnsweringError) Error() string {
	if e.NotActive {
		return fmt.Sprintf("not active within %s: %v", e.Wait, e.Err)
	}
	return fmt.Sprintf("does not answer within %s: %v", e.Wait, e.Err)
}

// Is: ErrStillStarting while no cause is named. The probe's error is not
// unwrapped: an unreachable service here is the start's failure (exit 1)
// or a slow start (exit 8), not siemctl's network (exit 5).
func (e *NotAnsweringError) Is(target error) bool { return target == ErrStillStarting && !e.Explained }

// ErrCertificateRefused is a component that answers with a certificate its
// clients refuse (the diagnosis's certificate cause): up, but not usable.
var ErrCertificateRefused = errors.New("answers with a certificate its clients refuse")

// certificateRefused judges a TLS refusal of the readiness probe: a
// certificate cause of the diagnosis fails the start at once; anything
// else (siemctl's own ca_file, no diagnosis) is an answer, which the
// health checks judge.
func (r *Runner) certificateRefused(ctx context.Context, c Component, st units.UnitStatus, err error) error {
	if r.Diagnose == nil {
		return nil
	}
	rep := r.Diagnose(ctx, c, st)
	for _, f := range rep.Findings {
		switch f.Kind {
		case diagnose.KindCertificate:
			return fmt.Errorf("%s %w (%v)", c.Unit, ErrCertificateRefused, err)
		case diagnose.KindPortBound:
			// the certificate refused is another server's, on the component's port
			return fmt.Errorf("%s: %w: %s (%v)", c.Unit, ErrNotItself, f.Cause, err)
		case diagnose.KindPlainHTTP:
			// no certificate at all: the component's own HTTP without TLS, which no waiting mends
			return fmt.Errorf("%s: %w: %s (%v)", c.Unit, ErrNotItself, f.Cause, err)
		}
	}
	return nil
}

// ErrRefused is a readiness probe's answer that names a failure waiting
// does not mend (the shipper's output refuses its credentials): the start
// fails at once with it (a RefusedError).
var ErrRefused = errors.New("refused")

// RefusedError is a probe's named failure: its cause, evidence and fix are
// the start's diagnosis (no log reading can say it better). Err is the
// error class (netclient.ErrUnauthorized: exit 4).
type RefusedError struct {
	Cause    string
	Evidence []string
	Fix      string
	Err      error
}

func (e *RefusedError) Error() string { return e.Cause }

// Is: ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func (e *RefusedError) Unwrap() error { return e.Err }

// ErrNotItself is a readiness probe answered by something that is not the
// component: another HTTP server on its port, another cluster's node.
// Ready means the component answers as itself.
var ErrNotItself = errors.New("its address answers, but not as the component")

// foreignAnswer fails the start at once when the diagnosis finds the
// component's port held by a process not of its unit; nil otherwise (the
// wait goes on: the component may still take its port).
func (r *Runner) foreignAnswer(ctx context.Context, c Component, st units.UnitStatus, err error) error {
	if r.Diagnose == nil {
		return nil
	}
	for _, f := range r.Diagnose(ctx, c, st).Findings {
		if f.Kind == diagnose.KindPortBound {
			return fmt.Errorf("%s: %s (%v)", c.Unit, f.Cause, err)
		}
	}
	return nil
}

func waitErr(err error, limit time.Duration) error {
	if errors.Is(err, units.ErrWaitTimeout) {
		return fmt.Errorf("not active within %s: %w", limit, err)
	}
	return err
}

func (r *Runner) stopOne(ctx context.Context, c Component, o *Outcome) error {
	if r.SkipDone {
		down, st, err := r.Stopped(ctx, c.Unit)
		if err != nil {
			return err
		}
		if down {
			o.State, o.Already = st, true
			return nil
		}
	}
	jctx, cancel := context.WithTimeout(ctx, r.wait(c))
	defer cancel()
	if err := r.Units.Stop(jctx, c.Unit); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("stop job did not finish within %s: %w", r.wait(c), err)
		}
		return err
	}
	st, err := r.Units.Wait(ctx, c.Unit, []string{units.Inactive, units.Failed}, r.wait(c))
	o.State = stateOf(st)
	if err != nil {
		return err
	}
	pids, err := r.processesGone(ctx, c.Unit)
	o.Leftover = pids
	if err != nil {
		return err
	}
	// A service killed by its stop signal may be left "failed": clean it,
	// so the next start and the health of the host see a stopped unit.
	if err := r.Units.ResetFailed(ctx, c.Unit); err != nil {
		return fmt.Errorf("reset-failed: %w", err)
	}
	if st.IsFailed() {
		o.State = units.Inactive + "/dead"
	}
	return nil
}

// Stopped reports whether unit is stopped: inactive (or failed) with no
// process left in its control group; state describes it either way.
func (r *Runner) Stopped(ctx context.Context, unit string) (stopped bool, state string, err error) {
	sts, err := r.Units.Status(ctx, unit)
	if err != nil {
		return false, "", err
	}
	if len(sts) != 1 {
		return false, "", fmt.Errorf("unit status: asked for 1 unit, got %d", len(sts))
	}
	st := sts[0]
	if st.ActiveState != units.Inactive && st.ActiveState != units.Failed {
		return false, stateOf(st), nil
	}
	pids, err := r.Units.Processes(ctx, unit)
	if err != nil {
		return false, "", err
	}
	if len(pids) > 0 {
		return false, fmt.Sprintf("%s with %d processes left (pids %s)", stateOf(st), len(pids), joinInts(pids, 8)), nil
	}
	return true, stateOf(st), nil
}

// processesGone waits up to ProcessWait for the unit's control group to be
// empty and returns what is left.
func (r *Runner) processesGone(ctx context.Context, unit string) ([]int, error) {
	limit := r.ProcessWait
	if limit <= 0 {
		limit = DefaultProcessWait
	}
	poll := r.ProcessPoll
	if poll <= 0 {
		poll = DefaultProcessPoll
	}
	var waited time.Duration
	for {
		pids, err := r.Units.Processes(ctx, unit)
		if err != nil {
			return nil, fmt.Errorf("verify processes of %s: %w", unit, err)
		}
		if len(pids) == 0 {
			return nil, nil
		}
		if waited >= limit {
			return pids, fmt.Errorf("%w: %d left in %s after %s (pids %s)", ErrProcessesLeft, len(pids), unit, limit, joinInts(pids, 10))
		}
		if r.Waiting != nil {
			r.Waiting("processes of %s to exit", unit)
		}
		if err := r.sleep(ctx, poll); err != nil {
			return pids, err
		}
		waited += poll
	}
}

func joinInts(v []int, max int) string {
	parts := make([]string, 0, len(v))
	for i, n := range v {
		if i == max {
			parts = append(parts, fmt.Sprintf("… %d more", len(v)-max))
			break
		}
		parts = append(parts, fmt.Sprint(n))
	}
	return strings.Join(parts, " ")
}

// Status is one component's unit state. A list of them is the "units
// inactive" verdict: Inactive picks the units that are not active, Fix and
// Describe say what to do and what was seen. The health check "units" maps
// an inactive unit to CRIT with Fix; the gates gate.units_active and
// gate.no_trace to pending with Describe; a gate whose component does not
// answer to a no-go when its unit is Down.
type Status struct {
	Component string           `json:"component"`
	Unit      string           `json:"unit"`
	Status    units.UnitStatus `json:"-"`
	Found     bool             `json:"found"`
	Active    bool             `json:"active"`
}

// Judge pairs unit states with their components (the component → unit
// map; a unit of none is named by itself).
func Judge(unitMap map[string]string, sts []units.UnitStatus) []Status {
	out := make([]Status, len(sts))
	for i, st := range sts {
		comp := st.Name
		for c, u := range unitMap {
			if units.Normalize(u) == units.Normalize(st.Name) {
				comp = c
			}
		}
		out[i] = Status{Component: comp, Unit: st.Name, Status: st, Found: st.Found(), Active: st.IsActive()}
	}
	return out
}

// Inactive returns the states that are not active (not found, failed,
// stopped, starting or stopping), in their order.
func Inactive(sts []Status) []Status {
	var out []Status
	for _, s := range sts {
		if !s.Active {
			out = append(out, s)
		}
	}
	return out
}

// Fix is what brings an inactive unit back: install its package when the
// unit is not found, restart a failed one, start a stopped one.
func (s Status) Fix() string {
	switch {
	case s.Active:
		return ""
	case !s.Found:
		return fmt.Sprintf("install the %s package", s.Component)
	case s.Status.IsFailed():
		return "siemctl services restart " + s.Component
	}
	return "siemctl services start " + s.Component
}

// Down: the unit is there and stopped or failed, not starting nor
// restarting on failure: its service will not answer until it is started.
func (s Status) Down() bool {
	return s.Found && (s.Status.ActiveState == units.Inactive || s.Status.ActiveState == units.Failed)
}

// Describe is "unit (active/sub)", a dash for a state systemd did not give.
func (s Status) Describe() string {
	return fmt.Sprintf("%s (%s/%s)", s.Status.Name, cmp.Or(s.Status.ActiveState, "-"), cmp.Or(s.Status.SubState, "-"))
}

// Status reads the state of comps' units, in start order.
func (r *Runner) Status(ctx context.Context, comps []Component) ([]Status, error) {
	comps = inStartOrder(comps)
	names := make([]string, len(comps))
	for i, c := range comps {
		names[i] = c.Unit
	}
	sts, err := r.Units.Status(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("unit status: %w", err)
	}
	if len(sts) != len(comps) {
		return nil, fmt.Errorf("unit status: asked for %d units, got %d", len(comps), len(sts))
	}
	out := Judge(nil, sts)
	for i, c := range comps {
		out[i].Component, out[i].Unit = c.Name, c.Unit
	}
	return out, nil
}

// Enable enables comps' unit files; it returns the symlinks created.
func (r *Runner) Enable(ctx context.Context, comps []Component) ([]units.UnitFileChange, error) {
	names := make([]string, len(comps))
	for i, c := range inStartOrder(comps) {
		names[i] = c.Unit
	}
	ch, err := r.Units.Enable(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("enable %s: %w", strings.Join(names, " "), err)
	}
	if ch == nil {
		ch = []units.UnitFileChange{}
	}
	return ch, nil
}
