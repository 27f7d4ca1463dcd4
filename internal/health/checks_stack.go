package health

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/output"
)

// ---- stack -----------------------------------------------------------------

func checkVersions(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	installed, err := packageVersions(ctx, e)
	if err != nil {
		return unknown("cannot read installed package versions: "+err.Error(), "dpkg-query -W "+c.Indexer.Package+" "+c.Manager.Package+" "+c.Dashboard.Package)
	}
	// This host's packages, and the versions its own services report.
	f := versions.Facts{Packages: c.HostPackageNames(), Installed: installed}
	if e.Stack.Manager.OK() && c.Runs("manager") {
		if info, err := managerInfo(ctx, e); err == nil {
			f.ManagerAPI = info.APIVersion
		}
	}
	if e.Stack.Dashboard != nil && c.Runs("dashboard") {
		if d, err := Shared(ctx, e, keyDashboard, e.Stack.Dashboard); err == nil {
			f.Dashboard = d.Version
		}
	}
	if e.Stack.Indexer.OK() && c.Runs("indexer") {
		f.Indexer, _ = indexerNodes(ctx, e) // shown against the release table, best effort
	}
	v := versions.Judge(f)
	evidence := append(v.Evidence, notHere(c)...)
	if !v.OK() {
		return crit(v.Summary, v.Fix, evidence...)
	}
	var core []string
	for _, comp := range versions.Core {
		if c.Runs(comp) {
			core = append(core, comp)
		}
	}
	switch len(core) {
	case 0:
		return ok("no indexer, manager or dashboard on this host", evidence...)
	case 3:
		return ok("indexer, manager and dashboard at "+v.Version, evidence...)
	}
	return ok(strings.Join(core, " and ")+" at "+v.Version+" on this host", evidence...)
}

// ---- alerts ----------------------------------------------------------------

func checkAlertsFlow(ctx context.Context, e *Env, ix IndexerAPI) Result {
	c := e.Stack.Config
	pattern := c.Indexer.AlertsIndexPrefix + "*"
	now := e.now()
	type newestT struct {
		t     time.Time
		found bool
		err   error
	}
	nc := make(chan newestT, 1)
	go func() {
		t, f, err := ix.Newest(ctx, pattern, "timestamp")
		nc <- newestT{t, f, err}
	}()
	n, err := ix.Count(ctx, pattern, "", now.Add(-5*time.Minute))
	if err != nil {
		return depFailed(ctx, e, "alert count", err)
	}
	nw := <-nc
	newest, found, err := nw.t, nw.found, nw.err
	evidence := []string{fmt.Sprintf("%d alerts in %s since %s", n, pattern, now.Add(-5*time.Minute).UTC().Format(time.RFC3339))}
	age := ""
	if err == nil && found {
		age = output.Duration(now.Sub(newest))
		evidence = append(evidence, "newest alert at "+newest.UTC().Format(time.RFC3339)+" ("+age+" ago)")
	}
	r := ok(fmt.Sprintf("%d alerts in the last 5 minutes, newest %s ago", n, output.Dash(age)), evidence...)
	r.Metrics = map[string]float64{"alerts_5m": float64(n)}
	if found {
		r.Metrics["newest_age_seconds"] = now.Sub(newest).Seconds()
	}
	if n == 0 {
		s := "no alerts indexed in the last 5 minutes"
		if found {
			s += ", newest " + age + " ago"
		} else {
			s += ", and none at all"
		}
		r.Status, r.Summary = Warn, s
		r.Fix = "siemctl alerts probe (names the hop that broke: manager, shipper or indexer)"
	}
	return r
}

func checkProbe(ctx context.Context, e *Env) Result {
	if e.Stack.Probe == nil {
		return unknown("not checked: no probe configured", "set manager.syslog")
	}
	rep, err := e.Stack.Probe(ctx)
	if err != nil {
		return crit("probe failed: "+errSummary(err), "siemctl alerts probe")
	}
	// hops not observable from here (skipped) are left out; the others keep state and latency
	var ev []string
	var total time.Duration
	for _, h := range rep.Hops {
		if h.State == probe.StateSkipped {
			continue
		}
		mark := "ok"
		if h.State != probe.StateOK {
			mark = "FAILED"
		}
		line := fmt.Sprintf("%s: %s after %s", h.Name, mark, h.Latency.Round(time.Millisecond))
		if h.Detail != "" {
			line += " (" + h.Detail + ")"
		}
		ev = append(ev, line)
		total = h.Latency
	}
	if !rep.OK {
		return crit("probe event did not arrive: broken at "+rep.BrokenAt, probeFix(rep.BrokenAt), ev...)
	}
	r := ok(fmt.Sprintf("probe %s searchable after %s", rep.Nonce, total.Round(time.Millisecond)), ev...)
	r.Metrics = map[string]float64{"latency_seconds": total.Seconds()}
	return r
}

func probeFix(hop string) string {
	switch hop {
	case "manager":
		return "the manager did not alert on the probe: check manager.syslog and the manager's remote/syslog config; siemctl services status manager"
	case "shipper":
		return "the alert is in the alerts file but not indexed: siemctl services restart shipper; check its log for 'Cannot index event'"
	case "indexer":
		return "indexed but not searchable: check indexer.templates and indexer.disk"
	case "manager or shipper":
		return "the alerts file is not readable here, so the lost hop is unknown: siemctl services status manager shipper; run siemctl alerts probe on the manager host"
	}
	return "siemctl alerts probe"
}
