package agents

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rules"
)

// UpgradeOptions are the inputs of `agents upgrade plan|apply|status|resume|abort`.
type UpgradeOptions struct {
	IO       *output.IOStreams
	Output   string
	Timeout  time.Duration
	Change   cli.Change
	API      func(ctx context.Context) (fleet.UpgradeAPI, error)
	StateDir func() (string, error)
	// MaxThreads reads the manager's <agent-upgrade><max_threads> (and says where from).
	MaxThreads func() (int, string)
	Now        func() time.Time
	Sleep      func(ctx context.Context, d time.Duration) error

	To          string
	Selector    fleet.UpgradeSelector
	Canary      int
	Waves       string
	MaxFailed   string
	Concurrency int
	Window      time.Duration
	Poll        time.Duration
	AgentWait   time.Duration
	Send        time.Duration
	Restart     time.Duration
	Run         string
}

func newUpgradeOptions(f *cli.Factory) *UpgradeOptions {
	return &UpgradeOptions{
		IO: f.IO,
		API: func(ctx context.Context) (fleet.UpgradeAPI, error) {
			c, err := f.Manager(ctx)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		StateDir: func() (string, error) {
			cfg, err := f.Config()
			if err != nil {
				return "", err
			}
			return cfg.StateDir, nil
		},
		MaxThreads: func() (int, string) {
			cfg, err := f.Config()
			if err != nil {
				return rules.DefaultUpgradeThreads, "the module's default (no configuration)"
			}
			p := filepath.Join(cfg.Manager.InstallDir, "etc", "ossec.conf")
			u, err := rules.ReadAgentUpgrade(p, runtime.NumCPU())
			if err != nil {
				return u.MaxThreads, fmt.Sprintf("the module's default (%s unreadable here: %v)", p, err)
			}
			return u.MaxThreads, p
		},
		Now:   time.Now,
		Sleep: sleepCtx,
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// NewCmdUpgrade builds the `agents upgrade` group.
func NewCmdUpgrade(f *cli.Factory, runF func(context.Context, string, *UpgradeOptions) error) *cobra.Command {
	run := func(verb string) func(context.Context, *UpgradeOptions) error {
		if runF != nil {
			return func(ctx context.Context, o *UpgradeOptions) error { return runF(ctx, verb, o) }
		}
		return map[string]func(context.Context, *UpgradeOptions) error{"plan": runUpgradePlan, "apply": runUpgradeApply,
			"status": runUpgradeStatus, "resume": runUpgradeResume, "abort": runUpgradeAbort}[verb]
	}
	g := &cobra.Command{
		Use:   "upgrade",
		Short: "Upgrade the agents through the manager, in waves with a canary and a stop rule",
		Long: `Upgrade the agents to the manager's version (or --to V) with the manager's upgrade module (WPK):
a canary wave, then growing waves; each wave sent in requests of at most 500 agents, never more WPK
sends under way than the manager's max_threads (its <agent-upgrade>, read from ossec.conf; --concurrency
only lowers it: an agent restarting after its send holds no thread, the next ones are sent meanwhile);
the next wave only once the current one passed its gate. An agent counts as upgraded on
evidence: active again, a keepalive after the send, the target version (a task reported Timeout or
Error is checked against it). A wave with more than --max-failed failed agents stops the run, each
failed agent with its cause and fix; resume continues from there. Disconnected agents are not sent:
the plan lists them, the run records them pending, and resume sends those that are back.`,
		Example: `  siemctl agents upgrade plan --outdated
  siemctl agents upgrade apply --to 4.10.0 --canary 5 --waves 5%,25%,100% --max-failed 1% --yes
  siemctl agents upgrade status
  siemctl agents upgrade resume --yes`,
	}
	plan := &cobra.Command{Use: "plan", Short: "Who is eligible, who is not and why, the waves and the time budget", Args: cobra.NoArgs}
	opts := func(cmd *cobra.Command, change bool) *UpgradeOptions {
		o := newUpgradeOptions(f)
		fl := cmd.Flags()
		fl.StringVar(&o.To, "to", "", "target version (default: the manager's)")
		fl.StringSliceVar(&o.Selector.Groups, "group", nil, "only agents in these groups")
		fl.StringSliceVar(&o.Selector.OS, "os", nil, "only agents on these platforms (os.platform: ubuntu, windows, ...)")
		fl.StringVar(&o.Selector.Node, "node", "", "only agents reporting to this cluster node")
		fl.StringSliceVar(&o.Selector.Agents, "agents", nil, "only these agent ids")
		fl.BoolVar(&o.Selector.Outdated, "outdated", false, "only agents older than the manager")
		fl.IntVar(&o.Canary, "canary", 1, "agents in the first wave")
		fl.StringVar(&o.Waves, "waves", "1%,10%,50%,100%", "the waves after the canary: growing shares of the eligible agents")
		fl.StringVar(&o.MaxFailed, "max-failed", "0", "failed agents a wave may have before the run stops: a count or a percentage of the wave")
		fl.IntVar(&o.Concurrency, "concurrency", 0, "WPK sends under way at once (only lowers the manager's max_threads)")
		fl.DurationVar(&o.Window, "window", 0, "start no wave after this long (a maintenance window); resume continues")
		fl.DurationVar(&o.AgentWait, "agent-wait", 20*time.Minute, "how long one agent may take before it counts as failed")
		fl.DurationVar(&o.Poll, "poll", 10*time.Second, "pause between two reads of the evidence")
		fl.DurationVar(&o.Send, "send-estimate", 30*time.Second, "time budget: one WPK send by one manager thread")
		fl.DurationVar(&o.Restart, "restart-estimate", 90*time.Second, "time budget: an agent's install and reconnection")
		return o
	}
	po := opts(plan, false)
	plan.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := cli.CheckOutput(f, "table", "json"); err != nil {
			return err
		}
		po.Output, po.Timeout = f.Global.Output, f.Global.Timeout
		return cli.Run(cmd.Context(), run("plan"), run("plan"), po)
	}
	apply := &cobra.Command{Use: "apply", Short: "Upgrade the planned agents wave by wave", Args: cobra.NoArgs}
	ao := opts(apply, true)
	f.ChangeCommand(apply, func(cmd *cobra.Command, _ []string, change cli.Change) error {
		ao.Output, ao.Timeout, ao.Change = f.Global.Output, f.Global.Timeout, change
		return cli.Run(cmd.Context(), run("apply"), run("apply"), ao)
	})
	status := &cobra.Command{Use: "status [RUN]", Short: "The latest (or the named) agent upgrade run", Args: cobra.MaximumNArgs(1)}
	so := newUpgradeOptions(f)
	status.RunE = func(cmd *cobra.Command, args []string) error {
		if err := cli.CheckOutput(f, "table", "json"); err != nil {
			return err
		}
		so.Output = f.Global.Output
		if len(args) == 1 {
			so.Run = args[0]
		}
		return cli.Run(cmd.Context(), run("status"), run("status"), so)
	}
	resume := &cobra.Command{Use: "resume [RUN]", Short: "Continue a stopped or paused run; send the pending agents that are back", Args: cobra.MaximumNArgs(1)}
	ro := newUpgradeOptions(f)
	resume.Flags().DurationVar(&ro.Window, "window", 0, "start no wave after this long")
	resume.Flags().DurationVar(&ro.Poll, "poll", 10*time.Second, "pause between two reads of the evidence")
	f.ChangeCommand(resume, func(cmd *cobra.Command, args []string, change cli.Change) error {
		ro.Output, ro.Timeout, ro.Change = f.Global.Output, f.Global.Timeout, change
		if len(args) == 1 {
			ro.Run = args[0]
		}
		return cli.Run(cmd.Context(), run("resume"), run("resume"), ro)
	})
	abort := &cobra.Command{Use: "abort [RUN]", Short: "End a run: no more waves (tasks already sent finish on the manager)", Args: cobra.MaximumNArgs(1)}
	bo := newUpgradeOptions(f)
	f.ChangeCommand(abort, func(cmd *cobra.Command, args []string, change cli.Change) error {
		bo.Output, bo.Change = f.Global.Output, change
		if len(args) == 1 {
			bo.Run = args[0]
		}
		return cli.Run(cmd.Context(), run("abort"), run("abort"), bo)
	})
	g.AddCommand(plan, apply, status, resume, abort)
	return cli.Group(g)
}

// waveOptions reads the wave flags and the manager's threads.
func (o *UpgradeOptions) waveOptions() (fleet.UpgradeWaveOptions, string, error) {
	w := fleet.UpgradeWaveOptions{Canary: o.Canary, AgentWait: o.AgentWait, Send: o.Send, Restart: o.Restart}
	var err error
	if o.Canary < 0 {
		return w, "", usage(fmt.Errorf("%w: --canary %d: want 0 or more", fleet.ErrInvalidInput, o.Canary))
	}
	if w.Waves, err = fleet.ParseWaves(o.Waves); err != nil {
		return w, "", usage(err)
	}
	if w.MaxFailed, w.MaxFailedPct, err = fleet.ParseMaxFailed(o.MaxFailed); err != nil {
		return w, "", usage(err)
	}
	threads, from := o.MaxThreads()
	w.InFlight = threads
	if o.Concurrency < 0 {
		return w, "", usage(fmt.Errorf("%w: --concurrency %d: want 1 or more", fleet.ErrInvalidInput, o.Concurrency))
	}
	if o.Concurrency > 0 {
		w.InFlight = min(threads, o.Concurrency)
	}
	return w, fmt.Sprintf("sends at once: %d (max_threads %d from %s)", w.InFlight, threads, from), nil
}

// plan builds the plan against the manager.
func (o *UpgradeOptions) plan(ctx context.Context, api fleet.UpgradeAPI) (fleet.UpgradePlan, string, error) {
	w, note, err := o.waveOptions()
	if err != nil {
		return fleet.UpgradePlan{}, "", err
	}
	info, err := api.ManagerInfo(ctx)
	if err != nil {
		return fleet.UpgradePlan{}, "", fmt.Errorf("manager version: %w", err)
	}
	mv, err := info.ParsedVersion()
	if err != nil {
		return fleet.UpgradePlan{}, "", fmt.Errorf("manager version: %w", err)
	}
	target := mv
	if o.To != "" {
		if target, err = fleet.ParseVersion(o.To); err != nil {
			return fleet.UpgradePlan{}, "", usage(err)
		}
	}
	p, err := fleet.PlanUpgrade(ctx, api, target, mv, o.Selector, w, fleet.DefaultPageSize)
	return p, note, usage(err)
}

func runUpgradePlan(ctx context.Context, o *UpgradeOptions) error {
	api, err := o.API(ctx)
	if err != nil {
		return err
	}
	p, note, err := o.plan(ctx, api)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		return output.JSON(o.IO.Out, p)
	}
	renderPlan(o.IO, p, note)
	return nil
}

// renderPlan prints the plan: the counts, the reasons, the waves and the budget.
func renderPlan(io *output.IOStreams, p fleet.UpgradePlan, note string) {
	w := io.Out
	fmt.Fprintf(w, "Agent upgrade to %s (manager %s): %d selected, %d eligible, %d pending (disconnected), %d not eligible\n",
		p.Target, p.Manager, p.Selected, len(p.Eligible), len(p.Pending), len(p.NotEligible))
	reasons := map[string][]string{}
	for _, a := range p.NotEligible {
		reasons[a.Reason] = append(reasons[a.Reason], a.ID)
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  not eligible, %s: %d (%s)\n", k, len(reasons[k]), firstIDs(reasons[k]))
	}
	if len(p.Pending) > 0 {
		ids := make([]string, len(p.Pending))
		for i, a := range p.Pending {
			ids[i] = a.ID
		}
		fmt.Fprintf(w, "  pending, %s: %d (%s)\n", fleet.ReasonDisconnected, len(ids), firstIDs(ids))
	}
	t := output.NewTable(w, io.IsStdoutTTY(), "wave", "agents", "first")
	for i, wv := range p.Waves {
		name := fmt.Sprint(i + 1)
		if i == 0 && p.Options.Canary > 0 {
			name += " (canary)"
		}
		t.Row(name, fmt.Sprint(len(wv)), firstIDs(wv))
	}
	_ = t.Render()
	fmt.Fprintf(w, "%s; %d upgrade request(s); time budget about %s\n", note, p.Requests, p.Budget.Round(time.Second))
}

func firstIDs(ids []string) string {
	if len(ids) > 5 {
		return strings.Join(ids[:5], ",") + ",…"
	}
	return strings.Join(ids, ",")
}

func runUpgradeApply(ctx context.Context, o *UpgradeOptions) error {
	api, err := o.API(ctx)
	if err != nil {
		return err
	}
	p, note, err := o.plan(ctx, api)
	if err != nil {
		return err
	}
	if len(p.Eligible) == 0 && len(p.Pending) == 0 {
		renderPlan(o.IO, p, note)
		fmt.Fprintln(o.IO.ErrOut, "no agent to upgrade")
		return nil
	}
	question := fmt.Sprintf("Upgrade %d agent(s) to %s in %d wave(s)?", len(p.Eligible), p.Target, len(p.Waves))
	release, proceed, err := o.Change.Begin(ctx, question, func() ([]string, error) {
		var lines []string
		for i, wv := range p.Waves {
			lines = append(lines, fmt.Sprintf("# wave %d: %d agent(s), then its gate", i+1, len(wv)))
			per := min(manager.MaxUpgradeRequest, max(p.Options.InFlight, 1))
			for s := 0; s < len(wv); s += per {
				lines = append(lines, manager.UpgradeAgentsCall(wv[s:min(s+per, len(wv))], manager.UpgradeOptions{Version: p.Target}))
			}
		}
		return lines, nil
	})
	if !proceed {
		if err == nil && o.Change.DryRun {
			return nil
		}
		return usage(err)
	}
	defer release()
	dir, err := o.StateDir()
	if err != nil {
		return err
	}
	r := fleet.NewUpgradeRun(p, o.Now())
	if err := r.StartJournal(dir, o.Now()); err != nil {
		return err
	}
	if err := r.Save(dir); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "run %s: %d agent(s) to %s, %s\n", r.ID, len(p.Eligible), p.Target, note)
	return o.finish(r, o.runner(api, dir).Run(ctx, r))
}

func (o *UpgradeOptions) runner(api fleet.UpgradeAPI, dir string) *fleet.Runner {
	return &fleet.Runner{API: api, StateDir: dir, Now: o.Now, Sleep: o.Sleep, Poll: o.Poll, Window: o.Window,
		Progress: func(format string, args ...any) { fmt.Fprintf(o.IO.ErrOut, format+"\n", args...) }}
}

// finish renders the run and maps its end to the exit code: a wave that failed its gate is exit 1
// with the failed agents' causes.
func (o *UpgradeOptions) finish(r *fleet.UpgradeRun, err error) error {
	if rerr := renderRun(o.IO, o.Output, r); rerr != nil && err == nil {
		err = rerr
	}
	if errors.Is(err, fleet.ErrWaveFailed) {
		return &cli.ExitError{Code: cli.ExitFailure, Reason: r.Reason + "; fix the causes above, then `siemctl agents upgrade resume`"}
	}
	return err
}

// renderRun prints a run: its state, then each wave (its agents, start and end, upgraded, failed with
// the cause and the fix, pending, and its gate's verdict), and the agents waiting outside the waves.
// -o json is the run's state with that report under "report".
func renderRun(io *output.IOStreams, format string, r *fleet.UpgradeRun) error {
	rep := r.Report()
	if format == "json" {
		return output.JSON(io.Out, struct {
			*fleet.UpgradeRun
			Report fleet.UpgradeReport `json:"report"`
		}{r, rep})
	}
	w := io.Out
	c := r.Counts()
	fmt.Fprintf(w, "Run %s: agents to %s, %s", r.ID, r.Target, r.State)
	if r.Reason != "" {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	fmt.Fprintf(w, "\n  upgraded %d, failed %d, in flight %d, planned %d, pending %d; %d upgrade request(s), %d read(s)\n",
		c[fleet.AgentUpgraded], c[fleet.AgentFailed], c[fleet.AgentSent], c[fleet.AgentPlanned], c[fleet.AgentPending], r.Requests, r.Reads)
	t := output.NewTable(w, io.IsStdoutTTY(), "wave", "agents", "state", "started", "ended", "upgraded", "failed", "pending", "gate")
	for _, wv := range rep.Waves {
		name := fmt.Sprint(wv.Wave)
		if wv.Canary {
			name += " (canary)"
		}
		t.Row(name, idSpan(wv.Agents), wv.State, clock(wv.Started), clock(wv.Ended), fmt.Sprint(len(wv.Upgraded)), fmt.Sprint(len(wv.Failed)),
			fmt.Sprint(len(wv.Pending)), wv.Gate.Line)
	}
	if err := t.Render(); err != nil {
		return err
	}
	ft := output.NewTable(w, io.IsStdoutTTY(), "wave", "agent", "node", "code", "cause", "fix")
	for _, wv := range rep.Waves {
		for _, f := range wv.Failed {
			code := "-"
			if f.Cause.Code != 0 {
				code = fmt.Sprint(f.Cause.Code)
			}
			ft.Row(fmt.Sprint(wv.Wave), f.ID, orDash(f.Node), code, f.Cause.Cause, f.Cause.Fix)
		}
	}
	if ft.Len() > 0 {
		fmt.Fprintln(w, "\nFailed:")
		if err := ft.Render(); err != nil {
			return err
		}
	}
	// Pending: the agents in flight, then those waiting outside the waves (held out of the wave named,
	// or "-": disconnected at the plan); the agents not sent yet are only counted (the wave's row).
	pt := output.NewTable(w, io.IsStdoutTTY(), "wave", "agent", "node", "state", "why")
	heldIn := map[string]string{}
	more := 0
	row := func(wave string, p fleet.PendingAgent) {
		if pt.Len() >= maxPendingRows {
			more++
			return
		}
		pt.Row(wave, p.ID, orDash(p.Node), p.State, p.Why)
	}
	for _, wv := range rep.Waves {
		for _, p := range wv.Pending {
			switch p.State {
			case fleet.AgentPending:
				heldIn[p.ID] = fmt.Sprint(wv.Wave)
			case fleet.AgentSent:
				row(fmt.Sprint(wv.Wave), p)
			}
		}
	}
	for _, p := range rep.Pending {
		row(orDash(heldIn[p.ID]), p)
	}
	if pt.Len() > 0 {
		fmt.Fprintln(w, "\nPending:")
		if err := pt.Render(); err != nil {
			return err
		}
	}
	if more > 0 {
		fmt.Fprintf(w, "... and %d more pending (-o json lists every agent)\n", more)
	}
	return nil
}

// maxPendingRows bounds the text report's pending table (a fleet of thousands).
const maxPendingRows = 50

// idSpan is a wave's agents in a cell: the count, and the ids when they are few.
func idSpan(ids []string) string {
	if len(ids) <= 4 {
		return fmt.Sprintf("%d: %s", len(ids), strings.Join(ids, ","))
	}
	return fmt.Sprintf("%d: %s..%s", len(ids), ids[0], ids[len(ids)-1])
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runUpgradeStatus(_ context.Context, o *UpgradeOptions) error {
	dir, err := o.StateDir()
	if err != nil {
		return err
	}
	r, err := fleet.LoadUpgradeRun(dir, o.Run)
	if err != nil {
		return usage(err)
	}
	return renderRun(o.IO, o.Output, r)
}

func runUpgradeResume(ctx context.Context, o *UpgradeOptions) error {
	dir, err := o.StateDir()
	if err != nil {
		return err
	}
	r, err := fleet.LoadUpgradeRun(dir, o.Run)
	if err != nil {
		return usage(err)
	}
	release, proceed, err := o.Change.Begin(ctx, fmt.Sprintf("Resume agent upgrade run %s (%s)?", r.ID, r.State), cli.Calls("# resume run "+r.ID+": the failed wave again, then the rest; pending agents that are back"))
	if !proceed {
		if err == nil && o.Change.DryRun {
			return nil
		}
		return usage(err)
	}
	defer release()
	api, err := o.API(ctx)
	if err != nil {
		return err
	}
	rn := o.runner(api, dir)
	if err := rn.Resume(ctx, r); err != nil {
		return usage(err)
	}
	return o.finish(r, rn.Run(ctx, r))
}

func runUpgradeAbort(ctx context.Context, o *UpgradeOptions) error {
	dir, err := o.StateDir()
	if err != nil {
		return err
	}
	r, err := fleet.LoadUpgradeRun(dir, o.Run)
	if err != nil {
		return usage(err)
	}
	release, proceed, err := o.Change.Begin(ctx, fmt.Sprintf("Abort agent upgrade run %s?", r.ID), cli.Calls("# mark run "+r.ID+" aborted"))
	if !proceed {
		if err == nil && o.Change.DryRun {
			return nil
		}
		return usage(err)
	}
	defer release()
	r.State, r.Reason, r.Ended = fleet.RunAborted, "aborted by the operator; tasks already sent finish on the manager", o.Now()
	if err := r.Journal(dir, o.Now(), fleet.JournalEvent{Type: fleet.JournalAbort, State: r.State, Reason: r.Reason}); err != nil {
		return err
	}
	if err := r.Save(dir); err != nil {
		return err
	}
	return renderRun(o.IO, o.Output, r)
}
