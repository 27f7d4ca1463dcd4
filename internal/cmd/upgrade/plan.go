package upgrade

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
)

// PlanOptions are the inputs of `upgrade plan`.
type PlanOptions struct {
	runs.Common
	To          string
	Runbook     string
	IgnoreGates []string
	Timeout     time.Duration
	// ClusterMode: --cluster, the rolling upgrade of a distributed deployment (roll.NewPlan).
	ClusterMode bool
	Cluster     roll.Deps
}

// NewCmdPlan builds `upgrade plan`.
func NewCmdPlan(f *cli.Factory, runF func(context.Context, *PlanOptions) error) *cobra.Command {
	opts := &PlanOptions{Common: common(f), Cluster: roll.NewDeps(f.Config, f.Indexer, f.Manager, f.Now, f.HostLock)}
	cmd := &cobra.Command{
		Use:   "plan --to VERSION",
		Short: "Show versions, go/no-go gates, every step and the rollback plan",
		Long: `Show the installed package and API versions, the candidate versions the package manager
offers, every preflight gate evaluated now (read-only), every step of the runbook with the
commands and API calls it makes, the rollback plan, and the time budget: each phase's
estimated duration (from this host's earlier runs, the indexer data volume and the
data-safety mode, else defaults whose floor is each unit's start wait), the total, the
rollback time, and the maintenance window with a 50–100% buffer. Nothing
changes.

With --cluster, from any host of a distributed deployment: every node of the indexer and
manager clusters and the dashboards in the order of the rolling upgrade (indexer nodes one
at a time with the elected cluster manager last, the manager master, the workers, the
dashboards), the gates of each phase, the coordination record's calls and the time budget
of the whole roll.

Exit codes: 0 go, 3 a gate says no-go, 2 usage.`,
		Example: `  siemctl upgrade plan --to 4.10.0
  siemctl upgrade plan --to 4.10.0-1 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Timeout = f.Global.Timeout
			if err := fillTarget(f, &opts.Common, opts.To); err != nil {
				return err
			}
			if opts.ClusterMode {
				if opts.Runbook != "" || len(opts.IgnoreGates) > 0 {
					return cli.FlagErrorf("--cluster plans the roll of every node; --runbook and --ignore-gate are for this host's plan")
				}
				return cli.Run(cmd.Context(), runF, runPlanCluster, opts)
			}
			return cli.Run(cmd.Context(), runF, runPlan, opts)
		},
	}
	targetFlag(cmd.Flags(), &opts.To)
	cmd.Flags().StringVar(&opts.Runbook, "runbook", "", "plan this runbook file instead of the embedded upgrade.yaml")
	cmd.Flags().StringSliceVar(&opts.IgnoreGates, "ignore-gate", nil, "leave out an ignorable gate (as apply would)")
	cmd.Flags().BoolVar(&opts.ClusterMode, "cluster", false, "plan the rolling upgrade of the whole distributed deployment (from any host)")
	return cmd
}

// PlanReport is `upgrade plan`'s output.
type PlanReport struct {
	Target     string             `json:"target"`
	Verdict    string             `json:"verdict"` // GO | NO-GO
	Components []ComponentVersion `json:"components"`
	// Indexer is what the indexer crosses: its OpenSearch on both sides, the rollback, the traps.
	Indexer  versions.Path        `json:"indexer_versions"`
	Gates    []upgrade.GateResult `json:"gates"`
	Steps    []PlanStep           `json:"steps"`
	Rollback RollbackPlan         `json:"rollback"`
	// Budget is the time the upgrade and its rollback are estimated to take.
	Budget upgrade.Budget `json:"budget"`
}

// ComponentVersion is one component's versions.
type ComponentVersion struct {
	upgrade.Candidate
	API string `json:"api_version,omitempty"`
}

// PlanStep is one step of the plan.
type PlanStep struct {
	N        int      `json:"n"`
	ID       string   `json:"id"`
	Kind     string   `json:"kind"`
	OnFail   string   `json:"on_fail"`
	Always   bool     `json:"always,omitempty"`
	Selected bool     `json:"selected"`
	Reason   string   `json:"reason,omitempty"`
	Describe []string `json:"describe"`
	Undo     []string `json:"undo,omitempty"`
	// Deadline is set when the kind asks for more than the runbook timeout (a
	// wait for the indexer's primaries: the count now, or the run's record).
	Deadline *engine.Deadline `json:"deadline,omitempty"`
}

// RollbackPlan is what a rollback would do.
type RollbackPlan struct {
	// Automatic: the undos, in the order they run (reverse), when a step
	// with on_fail: rollback fails.
	Automatic []PlanStep `json:"automatic"`
	// Explicit: `siemctl rollback` after a finished upgrade (rollback.yaml).
	Explicit []PlanStep `json:"explicit"`
}

func runPlan(ctx context.Context, opts *PlanOptions) error {
	// One --timeout deadline for the whole plan, the package manager's answers included.
	qctx, cancel := cli.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	p, err := prepare(qctx, opts.Common, opts.To, opts.Runbook, engine.Selection{}, opts.IgnoreGates)
	if err != nil {
		return deadlineErr(qctx, ctx, opts.Timeout, err)
	}
	rep := PlanReport{Target: opts.To, Components: []ComponentVersion{}}
	// The API versions and every gate are asked at once, under that
	// deadline: a hung stack costs it once.
	apisDone := make(chan map[string]string, 1)
	go func() { apisDone <- apiVersions(qctx, p.Deps) }()
	pathDone := make(chan versions.Path, 1)
	go func() { pathDone <- indexerPath(qctx, p.Deps, p.Candidates, opts.To) }()
	rep.Gates = upgrade.PreflightGates(qctx, p.Plan, p.Deps, p.Seed)
	apis := <-apisDone
	rep.Indexer = <-pathDone
	if err := ctx.Err(); err != nil {
		return err // interrupted: no verdict from half-asked gates
	}
	for _, c := range p.Candidates {
		rep.Components = append(rep.Components, ComponentVersion{Candidate: c, API: apis[c.Component]})
	}
	rep.Verdict = upgrade.VerdictGo
	if rep.Indexer.NoGo != "" {
		rep.Verdict = upgrade.VerdictNoGo
	}
	for _, g := range rep.Gates {
		if g.Verdict != upgrade.VerdictGo {
			rep.Verdict = upgrade.VerdictNoGo
		}
	}
	dls := upgrade.Deadlines(qctx, p.Plan, p.Deps, p.Seed)
	rep.Steps = planSteps(p.Plan, dls)
	for i := len(p.Plan.Steps) - 1; i >= 0; i-- {
		s := p.Plan.Steps[i]
		if s.Selected && s.Undo != nil {
			rep.Rollback.Automatic = append(rep.Rollback.Automatic, PlanStep{ID: s.ID, Kind: s.Undo.Kind.Name(), Describe: s.Undo.Describe, Selected: true, Deadline: deadline(dls, s.ID+" undo")})
		}
	}
	for _, s := range rep.Steps {
		if s.Always {
			rep.Rollback.Automatic = append(rep.Rollback.Automatic, s)
		}
	}
	rplan, err := p.RollbackPlan()
	if err != nil {
		return err
	}
	rep.Rollback.Explicit = planSteps(rplan, upgrade.Deadlines(qctx, rplan, p.Deps, nil))
	if rep.Budget, err = p.PlanBudget(qctx, rplan, rep.Gates); err != nil {
		return err
	}
	if rep.Gates == nil {
		rep.Gates = []upgrade.GateResult{}
	}
	return printPlan(opts.IO, opts.Output, rep, rep.Verdict, renderPlan)
}

func planSteps(plan *steps.Plan, dls map[string]engine.Deadline) []PlanStep {
	out := []PlanStep{}
	for _, s := range plan.Steps {
		ps := PlanStep{N: s.N, ID: s.ID, Kind: s.Step.Kind, OnFail: s.FailMode(), Always: s.Always, Selected: s.Selected, Reason: s.Reason,
			Describe: slices.Clone(s.Describe), Deadline: deadline(dls, s.ID)}
		if s.Undo != nil {
			ps.Undo = append([]string{s.Undo.Kind.Name()}, s.Undo.Describe...)
		}
		out = append(out, ps)
	}
	return out
}

func deadline(dls map[string]engine.Deadline, key string) *engine.Deadline {
	if dl, ok := dls[key]; ok {
		return &dl
	}
	return nil
}

// deadlineNote is a plan line's deadline note ("" without one).
func deadlineNote(dl *engine.Deadline) string {
	if dl == nil {
		return ""
	}
	return "; deadline " + dl.String()
}

// apiVersions asks the manager and the indexer for the versions they
// report, both at once, within ctx, best effort ("unreachable").
func apiVersions(ctx context.Context, d *steps.Deps) map[string]string {
	ask := map[string]func() (string, error){}
	if mg, err := d.Manager.Get(); err == nil {
		ask["manager"] = func() (string, error) {
			info, err := mg.Info(ctx)
			return "API " + info.APIVersion, err
		}
	}
	if ix, err := d.Indexer.Get(); err == nil {
		ask["indexer"] = func() (string, error) {
			nodes, err := ix.NodesVersions(ctx)
			var vs []string
			for _, n := range nodes {
				vs = append(vs, "OpenSearch "+n.Version)
			}
			return strings.Join(vs, ", "), err
		}
	}
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for comp, version := range ask {
		wg.Go(func() {
			v, err := version()
			if err != nil {
				v = "unreachable"
			}
			mu.Lock()
			out[comp] = v
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// printPlan prints a plan's report, as JSON with -o json or else through render, and exits no-go
// (3) when its verdict is not GO.
func printPlan[R any](ios *output.IOStreams, format string, rep R, verdict string, render func(io.Writer, bool, *output.Palette, R) error) error {
	if format == "json" {
		if err := output.JSON(ios.Out, rep); err != nil {
			return err
		}
	} else if err := render(ios.Out, ios.IsStdoutTTY(), ios.Colors(), rep); err != nil {
		return err
	}
	if verdict != upgrade.VerdictGo {
		return &cli.ExitError{Code: cli.ExitNoGo}
	}
	return nil
}

func renderPlan(w io.Writer, tty bool, c *output.Palette, rep PlanReport) error {
	fmt.Fprintf(w, "Upgrade plan to %s: %s\n\n", rep.Target, c.Status(rep.Verdict))
	t := output.NewTable(w, tty, "COMPONENT", "PACKAGE", "INSTALLED", "TARGET", "AVAILABLE", "REPORTS")
	for _, cv := range rep.Components {
		t.Row(cv.Component, cv.Package, output.Dash(cv.Installed), output.Dash(cv.Target), strings.Join(cv.Available, " "), output.Dash(cv.API))
	}
	if err := t.Render(); err != nil {
		return err
	}
	renderIndexerPath(w, rep.Indexer)
	fmt.Fprintln(w, "\nPreflight gates (evaluated now):")
	g := output.NewTable(w, tty, "STEP", "KIND", "VERDICT", "DETAIL")
	for _, gr := range rep.Gates {
		kind := gr.Kind
		if gr.Ignorable {
			kind += " (ignorable)"
		}
		g.Row(gr.Step, kind, c.Status(gr.Verdict), gr.Detail)
	}
	if err := g.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := rep.Budget.Render(w, tty); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nSteps:")
	for _, s := range rep.Steps {
		flags := "on_fail " + s.OnFail
		if s.Always {
			flags = "always (finally)"
		}
		if !s.Selected {
			flags = "not selected: " + s.Reason
		}
		fmt.Fprintf(w, "%3s  %s  [%s, %s]\n", numOrDash(s.N), s.ID, s.Kind, flags)
		for _, d := range s.Describe {
			fmt.Fprintf(w, "       %s\n", d)
		}
		if len(s.Undo) > 0 {
			fmt.Fprintf(w, "       undo: %s\n", strings.Join(s.Undo, "; "))
		}
		if s.Deadline != nil {
			fmt.Fprintf(w, "       deadline %s\n", s.Deadline)
		}
	}
	fmt.Fprintln(w, "\nAutomatic rollback (a step with on_fail: rollback fails): undos in this order, then finally-steps:")
	for _, s := range rep.Rollback.Automatic {
		fmt.Fprintf(w, "  %s  %s: %s%s\n", s.ID, s.Kind, strings.Join(s.Describe, "; "), deadlineNote(s.Deadline))
	}
	fmt.Fprintf(w, "\nExplicit rollback after the upgrade (siemctl rollback, rollback.yaml, back to %s):\n", installedLine(rep.Components))
	for _, s := range rep.Rollback.Explicit {
		fmt.Fprintf(w, "  %s  %s%s\n", s.ID, s.Kind, deadlineNote(s.Deadline))
	}
	return nil
}

func installedLine(cs []ComponentVersion) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Component+" "+output.Dash(packages.Upstream(c.Installed)))
	}
	return strings.Join(parts, ", ")
}

func numOrDash(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}
