package health

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/verdict"
	"github.com/siemctl/siemctl/internal/output"
)

// ---- indexer ---------------------------------------------------------------

func checkIndexerAPI(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	ix, err := e.Stack.Indexer.Get()
	if err != nil {
		return noClient("indexer", err, true)
	}
	insecureNote(e, c.Indexer.Insecure, "indexer", "indexer")
	info, err := indexerInfo(ctx, e)
	if err != nil {
		r := crit(errSummary(err), fixFor(err, "indexer", "indexer.ca_file", "indexer.username"), c.Indexer.URL)
		if errors.Is(err, netclient.ErrTLS) {
			if cause, fix, plain := diagnose.IndexerPlainHTTP("", c.Indexer.ConfigDir, c.Indexer.URL); plain {
				r.Summary, r.Fix = r.Summary+": "+cause, fix
				return r
			} else if causes := indexerTLSCauses(ctx, e); len(causes) > 0 {
				r.Summary, r.Fix = r.Summary+": "+causes[0].Summary, causes[0].Fix
			}
		}
		if errors.Is(err, indexer.ErrSecurityNotInitialized) {
			// a node started on an empty path.data has no security index either: an apply would
			// initialise the wrong directory; the fix is the data's
			if prev, found := lastIndexerSnapshot(c.StateDir); found {
				if m, moved := judgeMovedData(prev, diagnose.IndexerPathData(c.Indexer.ConfigDir), indexDirs, c.Indexer.ConfigDir); moved {
					return crit("security plugin not initialised: the node runs without its data ("+m.Summary+")", m.Fix, m.Evidence...)
				}
			}
			if u, known := componentUnit(ctx, e, "indexer"); known && u.Found {
				if age, loading := diagnose.SecurityLoading(u.Status, e.now()); loading {
					// a node reads its security index after "started": right after a
					// restart this is a wait; an apply then would replace the live
					// configuration for nothing
					return warn(fmt.Sprintf("starting: %s started %s ago and its security plugin is still loading its configuration (HTTP 503 \"OpenSearch Security not initialized.\")", u.Unit, age.Round(time.Second)),
						fmt.Sprintf("wait: siemctl health again in a minute (a node reads its security index within %s of its start); only if it still says so then: %s", diagnose.SecurityInitGrace(), diagnose.SecurityApplyFix), c.Indexer.URL)
				}
			}
			r.Summary = "security plugin not initialised (HTTP 503 \"OpenSearch Security not initialized.\")"
		} else if rep, ok := componentDiagnosis(ctx, e, "indexer"); ok {
			r.Summary += "; unit " + rep.Unit + ": " + rep.Summary()
			r.Fix = rep.Fix()
			r.Evidence = append(r.Evidence, rep.Lines()...)
		}
		return r
	}
	evidence := []string{fmt.Sprintf("GET / answered: node %s, cluster %s, version.number %s", info.Name, info.ClusterName, info.Version)}
	cluster, node := diagnose.IndexerIdentity(c.Indexer.ConfigDir)
	if err := (indexer.Identity{ClusterName: cluster, NodeName: node}).Check(info); err != nil {
		return crit(err.Error(), fmt.Sprintf("%s answers, but not as this host's indexer: point indexer.url at this indexer, or stop what answers there (siemctl health's ports check names who holds the port)", c.Indexer.URL), evidence...)
	}
	version := info.Version
	if nv, err := ix.NodesVersions(ctx); err == nil && len(nv) > 0 {
		version = nv[0].Version
		if info.CompatOverride() {
			evidence = append(evidence, fmt.Sprintf("real OpenSearch version %s (GET / reports %s: compatibility override)", version, info.Version))
		}
	}
	tlsWord := "TLS verified"
	if strings.HasPrefix(c.Indexer.URL, "http://") {
		tlsWord = "plain HTTP"
	} else if c.Indexer.Insecure {
		tlsWord = "TLS NOT verified"
	}
	return ok(fmt.Sprintf("OpenSearch %s on %s, %s, authenticated as %s", version, info.Name, tlsWord, c.Indexer.Username), evidence...)
}

func checkIndexerHealth(ctx context.Context, e *Env, ix IndexerAPI) Result {
	h, err := indexerHealth(ctx, e)
	if err != nil {
		return depFailed(ctx, e, "cluster health", err)
	}
	metrics := map[string]float64{"unassigned_shards": float64(h.UnassignedShards), "active_shards": float64(h.ActiveShards), "nodes": float64(h.NumberOfNodes)}
	base := fmt.Sprintf("%s, %d node(s), %d active shards, %d unassigned", h.Status, h.NumberOfNodes, h.ActiveShards, h.UnassignedShards)
	v := cluster.Status(h)
	var evidence []string
	var x *indexer.Explanation
	if h.Status == "yellow" || h.Status == "red" {
		evidence, x = explainUnassigned(ctx, e, ix)
	}
	var r Result
	switch v.Level {
	case cluster.OK:
		if v.Summary != "" {
			base += " (" + v.Summary + "; see indexer.shards)"
		}
		r = ok(base, evidence...)
	case cluster.Warn:
		r = warn(base+": "+v.Summary, v.Fix, evidence...)
	case cluster.NoGo:
		fix := v.Fix
		if rs := remediesOf(x); len(rs) > 0 {
			fix = remedyFix(e, rs) + "; abort any upgrade in progress and roll back"
		}
		r = crit(base+": "+v.Summary, fix, evidence...)
	default:
		return unknown(v.Summary, v.Fix)
	}
	r.Metrics = metrics
	return r
}

// explainUnassigned lists unassigned shards with reasons and the allocation
// explanation of the first one (a primary when one is unassigned), which it
// returns too (nil when there is none).
func explainUnassigned(ctx context.Context, e *Env, ix IndexerAPI) ([]string, *indexer.Explanation) {
	var ev []string
	shards, err := indexerShards(ctx, e)
	if err != nil {
		return []string{"cannot list shards: " + errSummary(err)}, nil
	}
	n := 0
	var first *indexer.Shard
	for i, s := range shards {
		if s.State != "UNASSIGNED" {
			continue
		}
		if first == nil || (s.PriRep == "p" && first.PriRep != "p") {
			first = &shards[i]
		}
		if n < 5 {
			kind := "replica"
			if s.PriRep == "p" {
				kind = "PRIMARY"
			}
			ev = append(ev, fmt.Sprintf("unassigned %s %s[%d]: %s", kind, s.Index, s.Shard, output.Dash(s.UnassignedReason)))
		}
		n++
	}
	if n > 5 {
		ev = append(ev, fmt.Sprintf("… and %d more unassigned shards", n-5))
	}
	if first == nil {
		return ev, nil
	}
	x, err := Shared(ctx, e, "indexer.explain", func(ctx context.Context) (indexer.Explanation, error) {
		return ix.AllocationExplain(ctx, indexer.ExplainRequest{Index: first.Index, Shard: first.Shard, Primary: first.PriRep == "p"})
	})
	if err != nil {
		return append(ev, "cannot explain "+first.Index+": "+errSummary(err)), nil
	}
	ev = append(ev, fmt.Sprintf("explain %s[%d]: %s", x.Index, x.Shard, output.Dash(x.AllocateExplanation)))
	for _, d := range x.Blocking() {
		ev = append(ev, fmt.Sprintf("  decider %s on %s: %s", d.Decider, d.Node, d.Explanation))
	}
	return ev, &x
}

func remediesOf(x *indexer.Explanation) []cluster.Remedy {
	if x == nil {
		return nil
	}
	return cluster.Remedies(*x)
}

// remedyFix renders what the allocation explanation says to do; a REST call
// becomes a curl command against the configured indexer (curl asks for the
// password).
func remedyFix(e *Env, rs []cluster.Remedy) string {
	c := e.Stack.Config.Indexer
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		if r.Call == nil {
			out = append(out, r.String())
			continue
		}
		out = append(out, r.Problem+": "+r.Call.Curl(c.URL, c.Username, c.CAFile, c.Insecure))
	}
	return strings.Join(out, "; ")
}

func checkAllocation(ctx context.Context, e *Env, _ IndexerAPI) Result {
	s, err := indexerSettings(ctx, e)
	if err != nil {
		return depFailed(ctx, e, "cluster settings", err)
	}
	var evidence []string
	en := s.AllocationEnable()
	evidence = append(evidence, fmt.Sprintf("%s=%s (%s)", indexer.KeyAllocationEnable, output.Dash(en.Value), output.Dash(string(en.Source))))
	for _, ov := range s.Overrides("cluster.routing.allocation.disk.") {
		if ov.Source == indexer.SourceTransient || ov.Source == indexer.SourcePersistent {
			evidence = append(evidence, fmt.Sprintf("%s=%s (%s)", ov.Key, ov.Value, ov.Source))
		}
	}
	// Both are worth a look here, neither stops the stack: WARN.
	var problems, fixes []string
	for _, v := range []cluster.Verdict{cluster.Leftovers(s, cluster.LeftoverOptions{Persistent: true}), cluster.Archived(s)} {
		if v.Level != cluster.OK {
			problems, fixes = append(problems, v.Summary), append(fixes, v.Fix)
		}
	}
	if len(problems) > 0 {
		return warn(strings.Join(problems, "; "), strings.Join(fixes, "; "), evidence...)
	}
	return ok("allocation enabled for all shards, no temporary overrides", evidence...)
}

func checkShards(ctx context.Context, e *Env, ix IndexerAPI) Result {
	h, err := indexerHealth(ctx, e)
	if err != nil {
		return depFailed(ctx, e, "cluster health", err)
	}
	s, err := indexerSettings(ctx, e)
	if err != nil {
		return depFailed(ctx, e, "cluster settings", err)
	}
	perNode, _ := s.MaxShardsPerNode()
	if perNode <= 0 {
		perNode = 1000
	}
	dataNodes := max(h.NumberOfDataNodes, 1)
	limit := perNode * dataNodes
	open := h.ActiveShards + h.UnassignedShards
	pct := 100 * float64(open) / float64(limit)
	metrics := map[string]float64{"shards": float64(open), "limit": float64(limit), "unassigned": float64(h.UnassignedShards)}
	evidence := []string{fmt.Sprintf("%d shards of a limit of %d (cluster.max_shards_per_node %d × %d data node(s)): %.0f%%", open, limit, perNode, dataNodes, pct)}
	var r Result
	switch {
	case pct >= 100:
		r = crit(fmt.Sprintf("shard limit reached (%d/%d): new daily alert indices cannot be created, alerts are lost", open, limit),
			"delete old alert indices (siemctl alerts cleanup --older-than 90d) or raise cluster.max_shards_per_node", evidence...)
	case pct >= 90:
		r = warn(fmt.Sprintf("%d/%d shards (%.0f%% of the limit): new indices will soon fail", open, limit, pct),
			"siemctl alerts cleanup --older-than 90d", evidence...)
	case h.UnassignedShards > 0:
		xev, x := explainUnassigned(ctx, e, ix)
		ev := append(evidence, xev...)
		fix := "siemctl indexer shards --unassigned (explains every unassigned shard)"
		if v := cluster.AllocationBack(s); v.Level != cluster.OK {
			fix = v.Fix
		} else if rs := remediesOf(x); len(rs) > 0 {
			fix = remedyFix(e, rs)
			if h.UnassignedShards > 1 {
				fix += "; siemctl indexer shards --unassigned explains the others"
			}
		}
		r = warn(fmt.Sprintf("%d unassigned shard(s)", h.UnassignedShards), fix, ev...)
	default:
		r = ok(fmt.Sprintf("all %d shards assigned; %.0f%% of the shard limit", h.ActiveShards, pct), evidence...)
	}
	r.Metrics = metrics
	return r
}

func checkDisk(ctx context.Context, e *Env, ix IndexerAPI) Result {
	t := e.Stack.Config.Thresholds
	alloc, err := ix.CatAllocation(ctx)
	if err != nil {
		return depFailed(ctx, e, "disk allocation", err)
	}
	worst := 0
	var evidence []string
	for _, a := range alloc {
		if a.Node == "UNASSIGNED" || a.DiskTotal == 0 {
			continue
		}
		evidence = append(evidence, fmt.Sprintf("%s: %d%% used (%s of %s), %d shards", a.Node, a.DiskPercent, output.Bytes(a.DiskUsed), output.Bytes(a.DiskTotal), a.Shards))
		worst = max(worst, a.DiskPercent)
	}
	blocks, err := ix.IndexBlocks(ctx, "*")
	if err != nil {
		evidence = append(evidence, "cannot read index blocks: "+errSummary(err))
	}
	var blocked []string
	for _, b := range blocks {
		blocked = append(blocked, fmt.Sprintf("%s (%s)", b.Index, strings.Join(b.Blocks, ",")))
	}
	metrics := map[string]float64{"used_percent": float64(worst), "blocked_indices": float64(len(blocked))}
	v := cluster.Disk(cluster.DiskUse{UsedPercent: float64(worst), Blocked: blocked}, cluster.DiskLimits{Warn: t.DiskWarnPercent, NoGo: t.DiskNogoPercent})
	if len(blocked) > 0 {
		evidence = append(evidence, "blocked: "+strings.Join(firstN(blocked, 5), ", "))
	}
	r := Result{Status: statusOf(v.Level), Summary: v.Summary, Fix: v.Fix, Evidence: evidence}
	r.Metrics = metrics
	return r
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string{}, s[:n]...), fmt.Sprintf("… %d more", len(s)-n))
}

// TodayIndex is the alerts index the shipper writes to today.
func TodayIndex(prefix string, now time.Time) string {
	return prefix + now.UTC().Format("2006.01.02")
}

func checkTemplates(ctx context.Context, e *Env, ix IndexerAPI) Result {
	c := e.Stack.Config
	name := c.Shipper.TemplateName
	today := TodayIndex(c.Indexer.AlertsIndexPrefix, e.now())
	// The shipper's binary is on the hosts that run it (the manager hosts of a distributed
	// deployment): elsewhere the fix says where to run it.
	where := ""
	if !slices.Contains(c.HostComponents(), "shipper") {
		where = "on a host that runs the shipper (a manager host; this one does not): "
	}
	fixTemplate := "siemctl can reload it: " + where + c.Shipper.Binary + " setup --index-management -E output.logstash.enabled=false"
	var problems, evidence, fixes []string
	type simT struct {
		sim indexer.Simulation
		err error
	}
	type pipeT struct {
		p   indexer.Pipeline
		err error
	}
	simc, pipec := make(chan simT, 1), make(chan pipeT, 1)
	go func() { s, err := ix.SimulateIndex(ctx, today); simc <- simT{s, err} }()
	go func() { p, err := ix.Pipeline(ctx, c.Shipper.Pipeline); pipec <- pipeT{p, err} }()
	tpl, err := ix.LegacyTemplate(ctx, name)
	switch {
	case err != nil:
		return depFailed(ctx, e, "templates", err)
	case !tpl.Found:
		problems = append(problems, fmt.Sprintf("alerts template %q is missing: new daily indices get wrong mappings", name))
		fixes = append(fixes, fixTemplate)
	default:
		evidence = append(evidence, fmt.Sprintf("template %s: patterns %s, order %d, mappings %s", name, strings.Join(tpl.IndexPatterns, ","), tpl.Order, short(tpl.MappingsHash)))
	}
	if tpl.Found {
		sr := <-simc
		sim, err := sr.sim, sr.err
		if err != nil {
			evidence = append(evidence, "cannot simulate "+today+": "+errSummary(err))
		} else {
			evidence = append(evidence, fmt.Sprintf("for %s: applied %s", today, strings.Join(sim.Applied, ", ")))
			if v := cluster.Shadowing(sim, name, today); v.Level != cluster.OK {
				problems, fixes = append(problems, v.Summary), append(fixes, v.Fix)
			}
		}
	}
	pr := <-pipec
	pipe, err := pr.p, pr.err
	switch {
	case err != nil:
		evidence = append(evidence, "cannot read pipeline: "+errSummary(err))
	case !pipe.Found:
		problems = append(problems, fmt.Sprintf("ingest pipeline %q is missing: the shipper's events are rejected", c.Shipper.Pipeline))
		fixes = append(fixes, where+c.Shipper.Binary+" setup --pipelines")
	default:
		evidence = append(evidence, fmt.Sprintf("pipeline %s present (%s)", pipe.ID, short(pipe.Hash)))
	}
	if len(problems) > 0 {
		return warn(strings.Join(problems, "; "), verdict.JoinFixes(fixes), evidence...)
	}
	return ok(fmt.Sprintf("template %s wins for %s; pipeline present", name, today), evidence...)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
