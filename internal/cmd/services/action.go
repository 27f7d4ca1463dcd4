package services

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/units"
)

// ActionOptions are the inputs of `services start|stop|restart`.
type ActionOptions struct {
	IO      *output.IOStreams
	Units   func(ctx context.Context) (services.Units, error)
	UnitMap func() (map[string]string, error)
	// StartWaits are the host's start wait limits (the config's start_wait keys).
	StartWaits func() (map[string]time.Duration, error)
	LogLines   func(ctx context.Context, st units.UnitStatus, n int) ([]string, error)
	// Explain gives the runner its readiness probes (start means ready)
	// and the diagnosis of a unit that fails.
	Explain func(ctx context.Context, r *services.Runner) error
	Action  string // start | stop | restart
	ChangeInputs
	// Runner tunes the runner (tests: clock, sleep, process wait).
	Runner services.Runner
}

// NewCmdStart builds `services start`.
func NewCmdStart(f *cli.Factory, runF func(context.Context, *ActionOptions) error) *cobra.Command {
	return newActionCmd(f, "start", runF, `Start units in dependency order: indexer, manager, dashboard, shipper, waiting for
each to be active (indexer up to 60s, manager 30s, dashboard 60s, shipper 30s; a host's own
in the config's start_wait keys, e.g. indexer.start_wait: 3m) before the next.
A unit that fails stops the sequence; it is explained with its result and last log lines.`,
		`  siemctl services start --yes
  siemctl services start dashboard shipper
  siemctl services start --dry-run`)
}

// NewCmdStop builds `services stop`.
func NewCmdStop(f *cli.Factory, runF func(context.Context, *ActionOptions) error) *cobra.Command {
	return newActionCmd(f, "stop", runF, `Stop units in reverse start order (shipper, dashboard, manager, indexer) and verify
that each unit's processes are gone.`,
		`  siemctl services stop shipper
  siemctl services stop all --yes`)
}

// NewCmdRestart builds `services restart`.
func NewCmdRestart(f *cli.Factory, runF func(context.Context, *ActionOptions) error) *cobra.Command {
	return newActionCmd(f, "restart", runF, `Restart units in start order, waiting for each like start does.`,
		`  siemctl services restart manager
  siemctl services restart --yes
  siemctl services restart all --dry-run`)
}

func newActionCmd(f *cli.Factory, action string, runF func(context.Context, *ActionOptions) error, long, example string) *cobra.Command {
	opts := &ActionOptions{IO: f.IO, Units: unitsFrom(f), UnitMap: unitMapFrom(f), StartWaits: startWaitsFrom(f), Explain: explainFrom(f), Action: action}
	cmd := &cobra.Command{
		Use:     action + " [component...|all]",
		Short:   strings.ToUpper(action[:1]) + action[1:] + " units in dependency order with bounded waits",
		Long:    long + "\n\n" + changeRule,
		Example: example,
	}
	return changeVerb(f, cmd, &opts.ChangeInputs, func(ctx context.Context) error {
		return cli.Run(ctx, runF, runAction, opts)
	})
}

// ChangeInputs are the parsed inputs every changing verb (start, stop,
// restart, enable) shares.
type ChangeInputs struct {
	Output     string
	Components []string
	// Change is the change rule: confirmation, host lock, --dry-run.
	Change cli.Change
}

// changeVerb wires what every changing verb shares: -o table|json, the
// components as arguments and the change rule, parsed into in; then run.
func changeVerb(f *cli.Factory, cmd *cobra.Command, in *ChangeInputs, run func(context.Context) error) *cobra.Command {
	cmd.ValidArgsFunction = completeComponents
	return f.ChangeCommand(cmd, func(c *cobra.Command, args []string, change cli.Change) error {
		*in = ChangeInputs{Output: f.Global.Output, Components: args, Change: change}
		return run(c.Context())
	})
}

// changeRule is the README's rule for every changing services verb.
const changeRule = `Asks for confirmation on a terminal (--yes off one) and takes the host lock, so it exits 6
naming the holder while an upgrade or rollback runs; --dry-run prints each unit job instead.`

type actionJSON struct {
	Action   string             `json:"action"`
	OK       bool               `json:"ok"`
	Outcomes []services.Outcome `json:"outcomes"`
}

func runAction(ctx context.Context, opts *ActionOptions) error {
	comps, all, err := selected(opts.UnitMap, opts.Components)
	if err != nil {
		return err
	}
	r := opts.Runner
	if opts.StartWaits != nil {
		waits, err := opts.StartWaits()
		if err != nil {
			return err
		}
		// The host's, under the runner's own (tests).
		merged := maps.Clone(waits)
		if merged == nil {
			merged = map[string]time.Duration{}
		}
		maps.Copy(merged, r.Waits)
		r.Waits = merged
	}
	q := fmt.Sprintf("%s %s?", strings.ToUpper(opts.Action[:1])+opts.Action[1:], unitList(comps))
	if all && opts.Action != "start" {
		q = fmt.Sprintf("%s all four units (%s)? The SIEM is unavailable meanwhile.", strings.ToUpper(opts.Action[:1])+opts.Action[1:], strings.Join(services.StartOrder, ", "))
	}
	release, proceed, err := opts.Change.Begin(ctx, q, cli.Calls(r.Calls(opts.Action, comps)...))
	if !proceed {
		return err
	}
	defer release()
	u, err := opts.Units(ctx)
	if err != nil {
		return err
	}
	r.Units = u
	if opts.LogLines != nil {
		r.LogLines = opts.LogLines
	}
	if opts.Explain != nil && opts.Action != "stop" {
		if err := opts.Explain(ctx, &r); err != nil {
			return err
		}
	}
	if opts.Output != "json" {
		ep := opts.IO.ErrColors()
		r.Progress = func(o services.Outcome, done bool) {
			if !done {
				limit := config.DefaultStartWaits[o.Component]
				if d, ok := r.Waits[o.Component]; ok {
					limit = d
				}
				fmt.Fprintf(opts.IO.ErrOut, "%s %s (%s, wait up to %s)…\n", gerund(o.Action), o.Component, o.Unit, limit)
				return
			}
			fmt.Fprintf(opts.IO.ErrOut, "  %s %s %s in %s\n", o.Component, ep.Outcome(o.Result == services.ResultDone, o.Result == services.ResultFailed), o.State, o.Took.Round(time.Millisecond))
		}
	}
	var outs []services.Outcome
	switch opts.Action {
	case "start":
		outs, err = r.Start(ctx, comps)
	case "stop":
		outs, err = r.Stop(ctx, comps)
	case "restart":
		outs, err = r.Restart(ctx, comps)
	default:
		return fmt.Errorf("unknown action %q", opts.Action)
	}
	if rerr := renderOutcomes(opts, outs, err == nil); rerr != nil {
		return rerr
	}
	return err
}

// selected resolves the component arguments against the configured unit
// map; an unknown component is a usage error (exit 2).
func selected(unitMap func() (map[string]string, error), names []string) ([]services.Component, bool, error) {
	um, err := unitMap()
	if err != nil {
		return nil, false, err
	}
	comps, all, err := services.Select(um, names)
	if err != nil {
		return nil, false, &cli.FlagError{Err: err}
	}
	return comps, all, nil
}

func unitList(comps []services.Component) string {
	names := make([]string, len(comps))
	for i, c := range comps {
		names[i] = c.Unit
	}
	return strings.Join(names, ", ")
}

func gerund(action string) string {
	switch action {
	case "stop":
		return "stopping"
	case "restart":
		return "restarting"
	}
	return "starting"
}

func renderOutcomes(opts *ActionOptions, outs []services.Outcome, ok bool) error {
	if outs == nil {
		outs = []services.Outcome{}
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, actionJSON{Action: opts.Action, OK: ok, Outcomes: outs})
	}
	p := opts.IO.Colors()
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "component", "unit", "action", "result", "state", "took")
	for _, o := range outs {
		state := o.State
		if state == "" {
			state = "-"
		}
		took := "-"
		if o.Result != services.ResultSkipped {
			took = o.Took.Round(time.Millisecond).String()
		}
		t.Row(o.Component, o.Unit, o.Action, p.Outcome(o.Result == services.ResultDone, o.Result == services.ResultFailed), state, took)
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, o := range outs {
		if o.Result != services.ResultFailed {
			continue
		}
		w := opts.IO.ErrOut
		fmt.Fprintf(w, "\n%s (%s) %s failed: %s\n", o.Component, o.Unit, o.Action, o.Error)
		if o.Failure != "" {
			fmt.Fprintf(w, "  systemd result: %s\n", o.Failure)
		}
		if len(o.Leftover) > 0 {
			fmt.Fprintf(w, "  processes still running: %v (inspect them before killing anything)\n", o.Leftover)
		}
		if o.Diagnosis != nil {
			for _, l := range o.Diagnosis.Lines() {
				fmt.Fprintf(w, "  %s\n", l)
			}
			if len(o.Diagnosis.Sources) > 0 {
				fmt.Fprintf(w, "  read: %s\n", strings.Join(o.Diagnosis.Sources, ", "))
			}
			continue
		}
		if len(o.LogLines) > 0 {
			fmt.Fprintf(w, "  last log lines:\n")
			for _, l := range o.LogLines {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		if o.Component == "manager" && o.Action != "stop" {
			fmt.Fprintf(w, "  a configuration error stops the manager from starting: check it with `siemctl health --check manager.config`\n")
		}
	}
	return nil
}
