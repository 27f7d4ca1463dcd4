package upgrade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/runbooks"
)

// The rolling upgrade of a distributed deployment (docs/distributed.md): `upgrade plan
// --cluster`, `upgrade status --cluster` (this file) and `upgrade node` (node.go) are doors onto
// internal/ops/rollout, whose record in the indexer coordinates the hosts.

// ClusterIndexer is what the cluster verbs need of the indexer: the facts of the order and the
// coordination record.
type ClusterIndexer interface {
	rollout.API
	rollout.IndexerFacts
}

// ClusterDeps are the cluster verbs' dependencies.
type ClusterDeps struct {
	Config  func() (*config.Config, error)
	Indexer func(ctx context.Context) (ClusterIndexer, error)
	// Manager returns the manager API (the manager cluster's facts), or why there is none.
	Manager  func(ctx context.Context) (rollout.ManagerFacts, error)
	Hostname func() (string, error)
	Now      func() time.Time
	// HostLock takes this host's lock (nil: not checked); a turn is taken only while it is free.
	HostLock func(ctx context.Context) (release func(), err error)
	// IndexerAt returns a client of another indexer node at a base URL, with indexer.url's
	// credentials, TLS settings and CA (nil: the record only through indexer.url).
	IndexerAt func(url string) (rollout.API, error)
}

// FactoryClusterDeps builds ClusterDeps from the Factory's clients.
func FactoryClusterDeps(f *cli.Factory) ClusterDeps {
	return ClusterDeps{
		Config: f.Config,
		Indexer: func(ctx context.Context) (ClusterIndexer, error) {
			c, err := f.Indexer(ctx)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Manager: func(ctx context.Context) (rollout.ManagerFacts, error) {
			c, err := f.Manager(ctx)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Hostname: os.Hostname,
		Now:      f.Now,
		HostLock: func(ctx context.Context) (func(), error) {
			return f.HostLock(ctx, "siemctl upgrade node (taking its turn)")
		},
		IndexerAt: func(url string) (rollout.API, error) {
			c, err := f.Indexer(context.Background())
			if err != nil {
				return nil, err
			}
			return c.At(url)
		},
	}
}

// store returns the coordination record's store over the indexer.
func (d ClusterDeps) store(ctx context.Context) (*rollout.Store, ClusterIndexer, error) {
	ix, err := d.Indexer(ctx)
	if err != nil {
		return nil, nil, err
	}
	s := rollout.NewStore(d.failover(ix))
	s.Now = d.Now
	return s, ix, nil
}

// failover reaches the record through the other indexer nodes when indexer.url does not answer
// (rollout.Failover): their addresses are learned from _nodes/http whenever it answers and kept in
// state_dir. Without IndexerAt (tests), ix alone.
func (d ClusterDeps) failover(ix ClusterIndexer) rollout.API {
	if d.IndexerAt == nil {
		return ix
	}
	stateDir := ""
	if cfg, err := d.Config(); err == nil {
		stateDir = cfg.StateDir
	}
	return rollout.NewFailover(ix, stateDir, d.IndexerAt)
}

// answeredBy names the indexer node that answered the record's last call when it was not
// indexer.url ("" when it was).
func answeredBy(s *rollout.Store) string {
	if fo, ok := s.API.(*rollout.Failover); ok {
		return fo.Answered()
	}
	return ""
}

// ClusterPlan is `upgrade plan --cluster`'s output.
type ClusterPlan struct {
	Target         string          `json:"target"`
	Verdict        string          `json:"verdict"` // GO | NO-GO
	ElectedManager string          `json:"elected_cluster_manager"`
	Order          []rollout.Entry `json:"order"`
	// Indexer is what the indexer crosses (indexerpath.go).
	Indexer versions.Path `json:"indexer_versions"`
	// Problems stop the roll (NO-GO), each with its fix.
	Problems []string `json:"problems"`
	// Warnings do not stop the roll; each says what it costs and its fix.
	Warnings []string `json:"warnings"`
	// Preflight are the preflight gates of upgrade apply --cluster evaluated now from this host,
	// as the single-host plan evaluates its own (a gate that is not GO is a problem).
	Preflight []upgrade.GateResult `json:"preflight"`
	Gates     []rollout.PhaseGates `json:"gates"`
	Budget    upgrade.RollBudget   `json:"budget"`
	// Run is the run already in the cluster, if any.
	Run *ClusterRunSummary `json:"run,omitempty"`
	// Calls are the coordination record's requests, per verb.
	Calls map[string][]string `json:"calls"`
}

// ClusterRunSummary names a run in the cluster.
type ClusterRunSummary struct {
	RunID  string        `json:"run_id"`
	Target string        `json:"target"`
	Phase  rollout.Phase `json:"phase"`
}

// coordinationCalls are the coordination record's requests, per verb.
func coordinationCalls() map[string][]string {
	create, read, write := rollout.Calls()
	return map[string][]string{
		"apply":  append(append([]string{}, rollout.FactCalls...), append(create, write+" (phase rolling)")...),
		"node":   {read, "GET /_nodes/http?filter_path=nodes.*.name,nodes.*.http.publish_address (the other nodes' addresses, kept in state_dir/" + rollout.NodesFile + ")", "GET /_cat/cluster_manager?format=json&h=node (indexer turns: the order is recomputed when it changed)", write + " (take the turn)", write + " (renew the lease every lease/3)", write + " (done or failed)"},
		"status": {read, "GET /_nodes/http?filter_path=nodes.*.name,nodes.*.http.publish_address (the other nodes' addresses, kept in state_dir/" + rollout.NodesFile + ": the record through them when indexer.url does not answer)"},
		"finish": {read, write + " (phase done)"},
	}
}

func runPlanCluster(ctx context.Context, opts *PlanOptions) error {
	d := opts.Cluster
	cfg, err := d.Config()
	if err != nil {
		return err
	}
	qctx, cancel := cli.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	s, ix, err := d.store(qctx)
	if err != nil {
		return err
	}
	mg, mgErr := d.Manager(qctx)
	facts, err := rollout.Gather(qctx, cfg, ix, mg, mgErr)
	if err != nil {
		return err
	}
	rep := ClusterPlan{Target: opts.To, ElectedManager: facts.ElectedManager, Problems: []string{}, Warnings: []string{}, Preflight: []upgrade.GateResult{},
		Gates: rollout.Gates, Calls: coordinationCalls()}
	rep.Problems = append(rep.Problems, noDowngrade(opts.To, facts)...)
	clusterIndexerPath(&rep, facts)
	if opts.Common.Deps != nil {
		gates, err := clusterPreflight(qctx, opts.Common, opts.To)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err // interrupted: no verdict from half-asked gates
		}
		rep.Preflight = gates
		for _, g := range gates {
			if g.Verdict != upgrade.VerdictGo {
				rep.Problems = append(rep.Problems, g.Step+": "+g.Detail)
			}
		}
	}
	if g := facts.SearchGap; g != nil {
		c := cfg.Indexer
		rep.Warnings = append(rep.Warnings, g.String(c.URL, c.Username, c.CAFile, c.Insecure))
	}
	order, oerr := rollout.Order(facts)
	var oe *rollout.OrderError
	switch {
	case errors.As(oerr, &oe):
		rep.Problems = append(rep.Problems, oe.Problems...)
	case oerr != nil:
		return oerr
	}
	rep.Order = order
	if rep.Order == nil {
		rep.Order = []rollout.Entry{}
	}
	switch rec, err := s.Load(qctx); {
	case errors.Is(err, rollout.ErrNoRun):
	case err != nil:
		return err
	default:
		rep.Run = &ClusterRunSummary{RunID: rec.RunID, Target: rec.Target, Phase: rec.Phase}
		if !rec.Phase.Ended() {
			rep.Problems = append(rep.Problems, fmt.Sprintf("run %s to %s is in phase %s: siemctl upgrade status --cluster shows it; finish or roll it back before another", rec.RunID, rec.Target, rec.Phase))
		}
	}
	turns := make([]upgrade.RollTurn, 0, len(order))
	for _, e := range order {
		turns = append(turns, upgrade.RollTurn{Name: e.Name, Components: e.Components})
	}
	rep.Budget = upgrade.EstimateRoll(turns, 0)
	rep.Verdict = upgrade.VerdictGo
	if len(rep.Problems) > 0 {
		rep.Verdict = upgrade.VerdictNoGo
	}
	return printPlan(opts.IO, opts.Output, rep, rep.Verdict, renderClusterPlan)
}

// clusterPreflight evaluates, read-only, the preflight gates of upgrade apply --cluster
// (runbooks/cluster-apply.yaml) from this host: the indexer cluster green, every node of both
// clusters present at one version with disk, the snapshot repository verified by every node, this
// host's packages offering the target (no downgrade, no major jump), no archived settings. The
// packages of the other hosts are judged in their own turns (node.yaml preflight/versions).
func clusterPreflight(ctx context.Context, c runs.Common, to string) ([]upgrade.GateResult, error) {
	deps, err := c.Deps(ctx)
	if err != nil {
		return nil, err
	}
	skip, err := inRunbook(runbooks.ClusterApply, deps.Config.NotHere())
	if err != nil {
		return nil, err
	}
	p, err := upgrade.Prepare(ctx, deps, upgrade.Request{To: to, Embedded: runbooks.ClusterApply, Selection: engine.Selection{Skip: skip}})
	if err != nil {
		return nil, err
	}
	gates := upgrade.PreflightGates(ctx, p.Plan, p.Deps, p.Seed)
	if gates == nil {
		gates = []upgrade.GateResult{}
	}
	return gates, nil
}

// noDowngrade names the manager nodes that run a newer version than the target: a roll goes
// forward only (going back is siemctl rollback --cluster, from the run's snapshot).
func noDowngrade(to string, f rollout.Facts) []string {
	target := packages.Upstream(to)
	var out []string
	for _, n := range f.ManagerNodes {
		v := strings.TrimPrefix(n.Version, "v")
		if v != "" && target != "" && packages.CompareDeb(target, v) < 0 {
			out = append(out, fmt.Sprintf("manager node %s runs %s, newer than the target %s: a rolling upgrade does not downgrade (siemctl rollback --cluster goes back from the run's snapshot; choose a target at or above %s)", n.Name, v, target, v))
		}
	}
	return out
}

func secs(s upgrade.Seconds) string { return output.Duration(s.D()) }

func renderClusterPlan(w io.Writer, tty bool, c *output.Palette, rep ClusterPlan) error {
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

// ClusterStatus is `upgrade status --cluster`'s output.
type ClusterStatus struct {
	Now    time.Time      `json:"now"`
	Record rollout.Record `json:"record"`
	// Current is the entry whose turn it is ("" when every entry is done).
	Current string                `json:"current"`
	Counts  map[rollout.State]int `json:"counts"`
	// LeaseLeft is the holder's lease left in seconds (negative: expired; absent: no holder).
	LeaseLeft *float64 `json:"lease_left_s,omitempty"`
	// ThisHost is the host the command ran on and the entries that are its own (what a fleet
	// driver such as ansible/upgrade.yml maps the record's turns to its hosts with); absent when
	// they cannot be told, with ThisHostError saying why.
	ThisHost      *ThisHost `json:"this_host,omitempty"`
	ThisHostError string    `json:"this_host_error,omitempty"`
	// AnsweredBy names the indexer node that answered when indexer.url did not (absent when it did).
	AnsweredBy string `json:"answered_by,omitempty"`
}

// ThisHost is this host's identity in the record: its name and its entries.
type ThisHost struct {
	Host string   `json:"host"`
	Mine []string `json:"mine"`
}

// identity is this host's name and its own entries of the record (rollout.HostIdentity over the
// config and the host name): what upgrade node takes turns as and status reports as this_host.
func (d ClusterDeps) identity() (rollout.Identity, error) {
	cfg, err := d.Config()
	if err != nil {
		return rollout.Identity{}, err
	}
	host, err := d.Hostname()
	if err != nil {
		return rollout.Identity{}, fmt.Errorf("host name: %w", err)
	}
	return rollout.HostIdentity(cfg, host)
}

func runStatusCluster(ctx context.Context, opts *StatusOptions) error {
	d := opts.Cluster
	s, _, err := d.store(ctx)
	if err != nil {
		return err
	}
	rec, err := s.Load(ctx)
	if errors.Is(err, rollout.ErrNoRun) {
		return fmt.Errorf("%w (siemctl upgrade apply --cluster --to V on the first host creates it)", err)
	}
	if err != nil {
		return err
	}
	if rec.Holder != nil {
		// The holder's token lets whoever has it write as the holder: status never shows it.
		h := *rec.Holder
		h.Token = ""
		rec.Holder = &h
	}
	now := d.now()
	st := ClusterStatus{Now: now, Record: rec, Counts: rec.Counts(), AnsweredBy: answeredBy(s)}
	if i := rec.Current(); i >= 0 {
		st.Current = rec.Order[i].Name
	}
	if rec.Holder != nil {
		left := rec.Holder.Expiry.Sub(now).Seconds()
		st.LeaseLeft = &left
	}
	if who, err := d.identity(); err != nil {
		st.ThisHostError = err.Error()
	} else {
		st.ThisHost = &ThisHost{Host: who.Host, Mine: who.Names}
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, st)
	}
	return renderClusterStatus(opts.IO.Out, opts.IO.IsStdoutTTY(), opts.IO.Colors(), st)
}

func (d ClusterDeps) now() time.Time {
	if d.Now != nil {
		return d.Now().UTC()
	}
	return time.Now().UTC()
}

func renderClusterStatus(w io.Writer, tty bool, c *output.Palette, st ClusterStatus) error {
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
