package upgrade

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
)

// The roll's read-only doors (docs/distributed.md): `upgrade plan --cluster` and `upgrade status
// --cluster` call internal/upgrade/roll and render what it returns.

func runPlanCluster(ctx context.Context, opts *PlanOptions) error {
	rep, err := roll.NewPlan(ctx, opts.Common, opts.Cluster, opts.To, opts.Timeout)
	if err != nil {
		return err
	}
	return printPlan(opts.IO, opts.Output, rep, rep.Verdict, renderClusterPlan)
}

func runStatusCluster(ctx context.Context, opts *StatusOptions) error {
	st, err := roll.ReadStatus(ctx, opts.Cluster)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, st)
	}
	return renderClusterStatus(opts.IO.Out, opts.IO.IsStdoutTTY(), opts.IO.Colors(), st)
}

func secs(s upgrade.Seconds) string { return output.Duration(s.D()) }

func renderClusterPlan(w io.Writer, tty bool, c *output.Palette, rep roll.Plan) error {
	fmt.Fprintf(w, "Rolling upgrade plan to %s: %s\n", rep.Target, c.Status(rep.Verdict))
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  %s %s\n", c.Red("no-go:"), p)
	}
	for _, p := range rep.Warnings {
		fmt.Fprintf(w, "  %s %s\n", c.Yellow("warning:"), p)
	}
	if rep.Run != nil {
		fmt.Fprintf(w, "Run in the cluster: %s to %s, phase %s\n", rep.Run.RunID, rep.Run.Target, rep.Run.Phase)
	}
	if len(rep.Preflight) > 0 {
		fmt.Fprintln(w, "\nPreflight gates of upgrade apply --cluster (evaluated now):")
		g := output.NewTable(w, tty, "STEP", "KIND", "VERDICT", "DETAIL")
		for _, gr := range rep.Preflight {
			g.Row(gr.Step, gr.Kind, c.Status(gr.Verdict), gr.Detail)
		}
		if err := g.Render(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nOrder (%d turns, one at a time; the elected cluster manager %s last of the indexers):\n", len(rep.Order), output.Dash(rep.ElectedManager))
	est := map[string]upgrade.Seconds{}
	for _, t := range rep.Budget.Turns {
		est[t.Name] = t.Estimate
	}
	t := output.NewTable(w, tty, "#", "ENTRY", "ROLE", "COMPONENTS", "VERSION NOW", "ESTIMATE")
	for i, e := range rep.Order {
		t.Row(fmt.Sprint(i+1), e.Name, string(e.Role), strings.Join(e.Components, ","), output.Dash(e.Version), secs(est[e.Name]))
	}
	if err := t.Render(); err != nil {
		return err
	}
	renderIndexerPath(w, rep.Indexer)
	fmt.Fprintln(w, "\nGates:")
	for _, g := range rep.Gates {
		fmt.Fprintf(w, "  %s — %s\n", g.Phase, g.Command)
		for _, x := range g.Gates {
			fmt.Fprintf(w, "    - %s\n", x)
		}
	}
	fmt.Fprintf(w, "\nCoordination record (%s/_doc/%s) calls:\n", rollout.Index, rollout.DocID)
	for _, verb := range []string{"apply", "node", "status", "finish"} {
		fmt.Fprintf(w, "  %s:\n", verb)
		for _, call := range rep.Calls[verb] {
			fmt.Fprintf(w, "    %s\n", call)
		}
	}
	b := rep.Budget
	_, err := fmt.Fprintf(w, "\nTime budget: apply %s, %d turns, finish %s; total %s; maintenance window %s–%s (%s)\n",
		secs(b.Apply), len(b.Turns), secs(b.Finish), secs(b.Total), secs(b.WindowMin), secs(b.WindowMax), b.Source)
	return err
}

func renderClusterStatus(w io.Writer, tty bool, c *output.Palette, st roll.Status) error {
	r := st.Record
	fmt.Fprintf(w, "Rolling upgrade %s: %s → %s, phase %s (created by %s %s, updated %s)\n", r.RunID, output.Dash(r.From), r.Target, r.Phase,
		output.Dash(r.CreatedBy), output.Ago(r.Created, st.Now), output.Ago(r.Updated, st.Now))
	if r.Note != "" {
		fmt.Fprintf(w, "Note: %s\n", r.Note)
	}
	if st.AnsweredBy != "" {
		fmt.Fprintf(w, "Read through indexer node %s: indexer.url did not answer\n", st.AnsweredBy)
	}
	switch h := r.Holder; {
	case h == nil && st.Current == "":
		fmt.Fprintln(w, "Turn: none (every entry done)")
	case h == nil:
		fmt.Fprintf(w, "Turn: %s's, not held\n", st.Current)
	case st.Now.Before(h.Expiry):
		fmt.Fprintf(w, "Turn: %s, held by host %s since %s, lease until %s (%s left)\n", h.Entry, h.Host, h.Since.UTC().Format(time.RFC3339),
			h.Expiry.UTC().Format(time.RFC3339), output.Duration(h.Expiry.Sub(st.Now)))
	default:
		fmt.Fprintf(w, "Turn: %s, held by host %s, %s (ended %s ago): its host resumes it with siemctl upgrade node\n", h.Entry, h.Host,
			c.Red("lease expired"), output.Duration(st.Now.Sub(h.Expiry)))
	}
	fmt.Fprintf(w, "Entries: %d done, %d running, %d failed, %d pending\n\n", st.Counts[rollout.Done], st.Counts[rollout.Running], st.Counts[rollout.Failed], st.Counts[rollout.Pending])
	t := output.NewTable(w, tty, "#", "ENTRY", "ROLE", "COMPONENTS", "STATE", "ATTEMPTS", "HOST", "STARTED", "FINISHED", "LAST ERROR")
	for i, e := range r.Order {
		t.Row(fmt.Sprint(i+1), e.Name, string(e.Role), strings.Join(e.Components, ","), c.Status(strings.ToUpper(string(e.State))), fmt.Sprint(e.Attempts),
			output.Dash(e.Host), stamp(e.Started), stamp(e.Finished), output.Dash(e.LastError))
	}
	return t.Render()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
