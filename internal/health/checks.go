package health

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/ops/hostcheck"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/units"
)

// Catalogue returns every check in display order.
func Catalogue() []Check {
	return []Check{
		{ID: "units", Component: "host", Title: "the four units are active", Run: checkUnits, Needs: []string{keyUnits}},
		{ID: "ports", Component: "host", Title: "the stack's ports are listening", Run: checkPorts},
		{ID: "indexer.api", Component: "indexer", Title: "indexer reachable, TLS verified, authenticated, security initialised", Run: checkIndexerAPI, Needs: []string{keyIndexerInfo}},
		{ID: "indexer.health", Component: "indexer", Title: "cluster health", Run: withIndexer(checkIndexerHealth), Needs: []string{keyIndexerInfo, keyIndexerHealth, keyIndexerShards}},
		{ID: "indexer.allocation", Component: "indexer", Title: "shard allocation enabled, no leftover overrides", Run: withIndexer(checkAllocation), Needs: []string{keyIndexerInfo, keyIndexerSettings}},
		{ID: "indexer.shards", Component: "indexer", Title: "unassigned shards and shard limit", Run: withIndexer(checkShards), Needs: []string{keyIndexerInfo, keyIndexerHealth, keyIndexerSettings, keyIndexerShards}},
		{ID: "indexer.disk", Component: "indexer", Title: "disk usage and read-only blocks", Run: withIndexer(checkDisk), Needs: []string{keyIndexerInfo}},
		{ID: "indexer.templates", Component: "indexer", Title: "alerts template wins for today's index; ingest pipeline present", Run: withIndexer(checkTemplates), Needs: []string{keyIndexerInfo}},
		{ID: "indexer.cluster", Component: "indexer", Title: "indexer cluster: every node present, one version, a cluster manager, heap and disk per node", Run: withIndexer(checkIndexerCluster), Needs: []string{keyIndexerInfo, keyIndexerHealth}},
		{ID: "manager.api", Component: "manager", Title: "manager API login, version, daemons ready", Run: checkManagerAPI, Needs: []string{keyManagerInfo, keyManagerStatus, keyUnits}},
		{ID: "manager.config", Component: "manager", Title: "manager configuration is valid", Run: checkManagerConfig, Needs: []string{keyManagerInfo}},
		{ID: "manager.cluster", Component: "manager", Title: "manager cluster: every node connected, one version, keepalives fresh, rulesets in sync", Run: checkManagerCluster, Needs: []string{keyManagerInfo}},
		{ID: "versions", Component: "stack", Title: "indexer, manager and dashboard at the same version", Run: checkVersions, Needs: []string{keyPackages, keyManagerInfo, keyDashboard}},
		{ID: "agents", Component: "manager", Title: "agents connected and not newer than the manager", Run: checkAgents, Needs: []string{keyManagerInfo}},
		{ID: "alerts.flow", Component: "alerts", Title: "alerts indexed in the last 5 minutes", Run: withIndexer(checkAlertsFlow), Needs: []string{keyIndexerInfo}},
		{ID: "dashboard", Component: "dashboard", Title: "dashboard answers and reaches its indexer", Run: checkDashboard, Needs: []string{keyDashboard}},
		{ID: "shipper", Component: "shipper", Title: "shipper config and output reachable", Run: checkShipper},
		{ID: "certs", Component: "host", Title: "certificate expiry", Run: checkCerts},
		{ID: "secrets", Component: "host", Title: "no default credentials, tight secret files, TLS verification on", Run: checkSecrets},
		{ID: "alerts.probe", Component: "alerts", Title: "end-to-end data-flow probe", Deep: true, Run: checkProbe},
	}
}

// ---- helpers ---------------------------------------------------------------

func crit(summary, fix string, evidence ...string) Result {
	return Result{Status: Crit, Summary: summary, Fix: fix, Evidence: evidence}
}
func warn(summary, fix string, evidence ...string) Result {
	return Result{Status: Warn, Summary: summary, Fix: fix, Evidence: evidence}
}
func ok(summary string, evidence ...string) Result {
	return Result{Status: OK, Summary: summary, Evidence: evidence}
}
func unknown(summary, fix string, evidence ...string) Result {
	return Result{Status: Unknown, Summary: summary, Fix: fix, Evidence: evidence}
}

// errSummary turns a client error into a short phrase: "unreachable: …".
func errSummary(err error) string {
	var ne *netclient.Error
	if errors.As(err, &ne) {
		s := ne.Kind.Error()
		if ne.Status != 0 {
			s += fmt.Sprintf(" (HTTP %d)", ne.Status)
		}
		switch {
		case ne.Detail != "":
			s += ": " + ne.Detail
		case ne.Err != nil:
			s += ": " + lastPart(ne.Err.Error())
		}
		return s
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer before the deadline"
	}
	return err.Error()
}

// lastPart keeps the most specific part of a chained error message.
func lastPart(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}

// fixFor proposes the fix for a client error against a component.
func fixFor(err error, component, caKey, userKey string) string {
	switch {
	case errors.Is(err, indexer.ErrSecurityNotInitialized):
		return "initialise the security plugin: siemctl security indexer apply"
	case errors.Is(err, netclient.ErrTLS):
		return fmt.Sprintf("renew or replace the %s certificate if it is expired or not from the CA the other components trust (see the certs check); only if it is valid and they accept it, set %s to the CA that signed it", component, caKey)
	case errors.Is(err, netclient.ErrUnauthorized), errors.Is(err, netclient.ErrForbidden):
		return fmt.Sprintf("check %s and its password source in the siemctl config", userKey)
	case errors.Is(err, netclient.ErrRateLimited):
		return "the manager API allows 300 requests/min for everybody: find the client hammering it (logs/api.log), then retry"
	case errors.Is(err, netclient.ErrUnreachable), errors.Is(err, netclient.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("siemctl services start %s (then siemctl services status %s)", component, component)
	case errors.Is(err, netclient.ErrNotReady):
		return fmt.Sprintf("wait a minute; if it persists: siemctl services restart %s", component)
	}
	return fmt.Sprintf("siemctl services status %s", component)
}

// noClient reports a component whose client could not be built: CRIT in
// the component's own check (own), UNKNOWN ("not checked") in the others.
func noClient(component string, err error, own bool) Result {
	summary, fix := "no "+component+" client: "+errString(err), "fix the "+component+" section of the siemctl config (siemctl help config)"
	if own {
		return crit(summary, fix)
	}
	return unknown("not checked: "+summary, fix)
}

// insecureNote notes once per run that a component's TLS is not verified.
func insecureNote(e *Env, insecure bool, what, key string) {
	if insecure {
		e.Note("TLS verification is disabled for the " + what + " (" + key + ".insecure: true)")
	}
}

// withIndexer runs a check that reads the indexer with its client; without
// one the check is not run (UNKNOWN, see indexer.api).
func withIndexer(check func(ctx context.Context, e *Env, ix IndexerAPI) Result) func(ctx context.Context, e *Env) Result {
	return func(ctx context.Context, e *Env) Result {
		if e.Stack.Indexer == nil {
			return noClient("indexer", e.Stack.IndexerErr, false)
		}
		return check(ctx, e, e.Stack.Indexer)
	}
}

// depFailed reports a check that could not read its data because the
// component failed: UNKNOWN pointing at the component's own check, which
// carries the CRIT and the fix.
func depFailed(ctx context.Context, e *Env, what string, err error) Result {
	component, api := "indexer", "indexer.api"
	if strings.HasPrefix(what, "manager") {
		component, api = "manager", "manager.api"
	}
	if component == "indexer" {
		if _, ierr := indexerInfo(ctx, e); ierr != nil {
			return unknown("not checked: indexer "+errSummary(ierr), "see "+api)
		}
	} else if _, merr := managerInfo(ctx, e); merr != nil {
		return unknown("not checked: manager API "+errSummary(merr), "see "+api)
	}
	return crit("cannot read "+what+": "+errSummary(err), fixFor(err, component, component+".ca_file", component+".username"))
}

// statusOf maps an indexer verdict's level: Wait (it may settle by
// itself) is worth a look now, WARN; NoGo is CRIT.
func statusOf(l cluster.Level) Status {
	switch l {
	case cluster.OK:
		return OK
	case cluster.Warn, cluster.Wait:
		return Warn
	case cluster.NoGo:
		return Crit
	}
	return Unknown
}

func errString(err error) string {
	if err == nil {
		return "not configured"
	}
	return err.Error()
}

func indexerInfo(ctx context.Context, e *Env) (indexer.Info, error) {
	return Shared(ctx, e, keyIndexerInfo, e.Stack.Indexer.Info)
}

func indexerHealth(ctx context.Context, e *Env) (indexer.Health, error) {
	return Shared(ctx, e, keyIndexerHealth, func(ctx context.Context) (indexer.Health, error) {
		return e.Stack.Indexer.Health(ctx, indexer.HealthRequest{})
	})
}

func indexerSettings(ctx context.Context, e *Env) (indexer.Settings, error) {
	return Shared(ctx, e, keyIndexerSettings, func(ctx context.Context) (indexer.Settings, error) {
		return e.Stack.Indexer.Settings(ctx, true)
	})
}

func indexerShards(ctx context.Context, e *Env) ([]indexer.Shard, error) {
	return Shared(ctx, e, keyIndexerShards, e.Stack.Indexer.CatShards)
}

func managerStatus(ctx context.Context, e *Env) (manager.DaemonStates, error) {
	return Shared(ctx, e, keyManagerStatus, e.Stack.Manager.ManagerStatus)
}

func managerInfo(ctx context.Context, e *Env) (manager.APIInfo, error) {
	return Shared(ctx, e, keyManagerInfo, e.Stack.Manager.Info)
}

func unitsConn(ctx context.Context, e *Env) (UnitsAPI, error) {
	return Shared(ctx, e, keyUnitsConn, e.Stack.Units)
}

// unitStates reads the four units' states once per run (units check, and
// the manager.api check's fix).
func unitStates(ctx context.Context, e *Env) ([]units.UnitStatus, error) {
	return Shared(ctx, e, keyUnits, func(ctx context.Context) ([]units.UnitStatus, error) {
		um, err := unitsConn(ctx, e)
		if err != nil {
			return nil, err
		}
		return um.Status(ctx, hostUnitNames(e.Stack.Config)...)
	})
}

// unitWait bounds how long a check waits for the unit states it only uses
// to choose its fix.
const unitWait = 500 * time.Millisecond

// componentUnit returns the "units inactive" verdict on one component's
// unit when systemd answers within unitWait.
func componentUnit(ctx context.Context, e *Env, component string) (services.Status, bool) {
	if e.Stack.Units == nil {
		return services.Status{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, unitWait)
	defer cancel()
	sts, err := unitStates(ctx, e)
	if err != nil {
		return services.Status{}, false
	}
	for _, u := range services.Judge(e.Stack.Config.HostUnits(), sts) {
		if u.Component == component {
			return u, true
		}
	}
	return services.Status{}, false
}

// packageVersions reads each component's installed version once per run.
func packageVersions(ctx context.Context, e *Env) (map[string]string, error) {
	return Shared(ctx, e, keyPackages, func(ctx context.Context) (map[string]string, error) {
		if e.Stack.Packages == nil {
			return nil, fmt.Errorf("no package manager: %s", errString(e.Stack.PackagesErr))
		}
		return packages.ByComponent(ctx, e.Stack.Packages, e.Stack.Config.HostPackageNames())
	})
}

// hostUnitNames are the units of the components this host runs, in start
// order.
func hostUnitNames(c *config.Config) []string {
	units := c.HostUnits()
	names := make([]string, 0, len(units))
	for _, comp := range c.HostComponents() {
		names = append(names, units[comp])
	}
	return names
}

// notHere is the evidence line naming the components this host does not run
// (none on a single host): a check of this host's own units, ports or
// packages does not judge them.
func notHere(c *config.Config) []string {
	if n := c.NotHere(); len(n) > 0 {
		return []string{"not on this host (components: " + strings.Join(c.HostComponents(), ", ") + "): " + strings.Join(n, ", ")}
	}
	return nil
}

// ---- host ------------------------------------------------------------------

func checkUnits(ctx context.Context, e *Env) Result {
	if e.Stack.Units == nil {
		return unknown("not checked: no systemd connection configured", "set systemd.address or run on the SIEM host")
	}
	if _, err := unitsConn(ctx, e); err != nil {
		return unknown("cannot reach systemd: "+errSummary(err), "run siemctl on the SIEM host as root, or set systemd.address")
	}
	c := e.Stack.Config
	names := hostUnitNames(c)
	sts, err := unitStates(ctx, e)
	if err != nil {
		return unknown("cannot read unit states: "+errSummary(err), "systemctl status "+strings.Join(names, " "))
	}
	var bad, evidence, fix, causes []string
	active := 0
	for _, u := range services.Judge(c.HostUnits(), sts) {
		st := u.Status
		line := unitLine(st)
		if st.NRestarts > 0 {
			line += fmt.Sprintf(", %d restarts", st.NRestarts)
		}
		if st.MainPID > 0 {
			line += fmt.Sprintf(", pid %d", st.MainPID)
		}
		if u.Active {
			active++
			evidence = append(evidence, line)
			continue
		}
		switch {
		case !u.Found:
			line += " (unit not found: is the package installed?)"
		case st.IsFailed():
			if f := st.Failure(); f != "" {
				line += " (" + f + ")"
			}
		}
		bad = append(bad, st.Name)
		evidence = append(evidence, line)
		if rep, ok := unitDiagnosis(ctx, e, u); ok {
			fix = append(fix, rep.Fix())
			causes = append(causes, st.Name+": "+rep.Summary())
			for _, l := range rep.Lines() {
				evidence = append(evidence, "  "+l)
			}
			continue
		}
		fix = append(fix, u.Fix())
		if lines, err := units.LastLogLines(ctx, st, 3); err == nil {
			for _, l := range lines {
				evidence = append(evidence, "  "+st.Name+" log: "+l)
			}
		}
	}
	r := ok(fmt.Sprintf("%d/%d units active", active, len(sts)), append(evidence, notHere(c)...)...)
	r.Metrics = map[string]float64{"active": float64(active), "total": float64(len(sts))}
	if len(bad) > 0 {
		r.Status = Crit
		r.Summary = fmt.Sprintf("%d/%d units active; not active: %s", active, len(sts), strings.Join(bad, ", "))
		if len(causes) > 0 {
			r.Summary += "; " + strings.Join(causes, "; ")
		}
		r.Fix = strings.Join(dedupe(fix), "; ")
	}
	return r
}

// unitLine is "name: active/sub since 2026-11-21T10:00:00Z" (since only
// for an active unit).
func unitLine(st units.UnitStatus) string {
	line := fmt.Sprintf("%s: %s/%s", st.Name, st.ActiveState, st.SubState)
	if !st.ActiveSince.IsZero() && st.IsActive() {
		line += " since " + st.ActiveSince.UTC().Format(time.RFC3339)
	}
	return line
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// expectedPorts are the ports of the components this host runs that must
// listen on this host.
func expectedPorts(c *config.Config) ([]hostcheck.ExpectedPort, []string) {
	urls, fixed := map[string]string{}, map[string]int{}
	if c.Runs("indexer") {
		urls["indexer"] = c.Indexer.URL
	}
	if c.Runs("manager") {
		urls["manager API"] = c.Manager.APIURL
		fixed["manager agents"], fixed["manager enrollment"] = c.Manager.AgentPort, c.Manager.EnrollmentPort
	}
	if c.Runs("dashboard") {
		urls["dashboard"] = c.Dashboard.URL
	}
	want, remote := hostcheck.Expected(urls, fixed)
	return want, append(remote, notHere(c)...)
}

func checkPorts(ctx context.Context, e *Env) Result {
	if e.Stack.Ports == nil {
		return unknown("not checked: no port probe", "")
	}
	listening, err := e.Stack.Ports(ctx)
	if err != nil {
		return unknown("cannot list listening ports: "+err.Error(), "ss -ltn")
	}
	want, remote := expectedPorts(e.Stack.Config)
	v := hostcheck.JudgePorts(want, remote, listening)
	judgeOwners(ctx, e, &v)
	var evidence, fix, missing, foreign, list []string
	for _, p := range v.Ports {
		list = append(list, strconv.Itoa(p.Port))
		switch {
		case p.Foreign:
			unit := e.Stack.Config.Units()[p.Component()]
			evidence = append(evidence, fmt.Sprintf("%s listening, held by %s: not %s", p, p.Holder.Describe(), unit))
			foreign = append(foreign, fmt.Sprintf("%s held by %s", p, p.Holder.Describe()))
			fix = append(fix, foreignFix(p, unit))
			continue
		case p.Listening && p.Holder != nil:
			evidence = append(evidence, fmt.Sprintf("%s listening: %s", p, p.Holder.Describe()))
			continue
		case p.Listening:
			evidence = append(evidence, p.String()+" listening")
			continue
		}
		evidence = append(evidence, p.String()+" NOT listening")
		missing = append(missing, p.String())
		f := "siemctl services restart " + p.Component()
		if rep, ok := componentDiagnosis(ctx, e, p.Component()); ok {
			f = rep.Fix()
		}
		fix = append(fix, f)
	}
	evidence = append(evidence, v.Remote...)
	if len(missing)+len(foreign) > 0 {
		return crit(joinNonEmpty("; ", prefixed("not the component's: ", foreign), prefixed("not listening: ", missing)), strings.Join(dedupe(fix), "; "), evidence...)
	}
	return ok("listening: "+strings.Join(list, " "), evidence...)
}

// ---- indexer ---------------------------------------------------------------

func checkIndexerAPI(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	if e.Stack.Indexer == nil {
		return noClient("indexer", e.Stack.IndexerErr, true)
	}
	insecureNote(e, c.Indexer.Insecure, "indexer", "indexer")
	info, err := indexerInfo(ctx, e)
	if err != nil {
		r := crit(errSummary(err), fixFor(err, "indexer", "indexer.ca_file", "indexer.username"), c.Indexer.URL)
		if errors.Is(err, netclient.ErrTLS) {
			if causes := indexerTLSCauses(ctx, e); len(causes) > 0 {
				r.Summary, r.Fix = r.Summary+": "+causes[0].Summary, causes[0].Fix
			}
		}
		if errors.Is(err, indexer.ErrSecurityNotInitialized) {
			r.Summary = "security plugin not initialised (HTTP 503 \"OpenSearch Security not initialized.\")"
		} else if rep, ok := componentDiagnosis(ctx, e, "indexer"); ok {
			r.Summary += "; unit " + rep.Unit + ": " + rep.Summary()
			r.Fix = rep.Fix()
			r.Evidence = append(r.Evidence, rep.Lines()...)
		}
		return r
	}
	version := info.Version
	evidence := []string{fmt.Sprintf("GET / answered: node %s, cluster %s, version.number %s", info.Name, info.ClusterName, info.Version)}
	if nv, err := e.Stack.Indexer.NodesVersions(ctx); err == nil && len(nv) > 0 {
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
	fixTemplate := "siemctl can reload it: " + c.Shipper.Binary + " setup --index-management -E output.logstash.enabled=false"
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
		fixes = append(fixes, c.Shipper.Binary+" setup --pipelines")
	default:
		evidence = append(evidence, fmt.Sprintf("pipeline %s present (%s)", pipe.ID, short(pipe.Hash)))
	}
	if len(problems) > 0 {
		return warn(strings.Join(problems, "; "), strings.Join(dedupe(fixes), "; "), evidence...)
	}
	return ok(fmt.Sprintf("template %s wins for %s; pipeline present", name, today), evidence...)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ---- manager ---------------------------------------------------------------

func checkManagerAPI(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	if e.Stack.Manager == nil {
		return noClient("manager", e.Stack.ManagerErr, true)
	}
	insecureNote(e, c.Manager.Insecure, "manager API", "manager")
	info, err := managerInfo(ctx, e)
	if err != nil {
		if manager.HasCode(err, manager.CodeDaemonsNotReady) || errors.Is(err, netclient.ErrNotReady) {
			return daemonsNotReady(ctx, e, err)
		}
		fix, ev := managerAPIFix(ctx, e, err)
		return crit(errSummary(err), fix, append([]string{c.Manager.APIURL}, ev...)...)
	}
	evidence := []string{fmt.Sprintf("%s %s (revision %d) on %s", info.Title, info.APIVersion, info.Revision, info.Hostname)}
	st, err := managerStatus(ctx, e)
	if err != nil {
		return warn(fmt.Sprintf("API %s answers, but daemon states unreadable: %s", info.APIVersion, errSummary(err)), "siemctl services status manager", evidence...)
	}
	if down := st.Down(); len(down) > 0 {
		return crit("daemon(s) down: "+strings.Join(down, ", "), daemonsDownFix(c, down), evidence...)
	}
	if nr := st.NotReady(); len(nr) > 0 {
		return crit("daemons not ready: "+strings.Join(nr, ", "), "wait a minute after a restart; if it persists: siemctl services restart manager", evidence...)
	}
	return ok(fmt.Sprintf("API %s, login as %s, daemons ready", info.APIVersion, c.Manager.Username), evidence...)
}

// daemonsNotReady explains a 1017 answer: which basic daemons are not
// ready, read from the answer itself, /manager/status (only with a token
// already held: a fresh login is refused with 1017 too) or the control
// tool's status. A failed or stopped daemon gets its real fix; only
// starting or restarting ones mean "wait".
func daemonsNotReady(ctx context.Context, e *Env, apiErr error) Result {
	c := e.Stack.Config
	ev := []string{c.Manager.APIURL}
	states := manager.DaemonStates{}
	if named, ok := manager.NotReadyError(apiErr); ok {
		maps.Copy(states, named)
	}
	if st, err := managerStatus(ctx, e); err == nil {
		maps.Copy(states, st)
		ev = append(ev, "daemon states from GET /manager/status")
	} else if e.Stack.Tools != nil {
		if cs, err := e.Stack.Tools.ControlStatus(ctx); err == nil {
			for name, state := range cs.States() {
				// the tool only knows running / not running: keep the API's finer state
				if prev, known := states[name]; !known || state == manager.DaemonRunning || prev == manager.DaemonRunning {
					states[name] = state
				}
			}
			ev = append(ev, "daemon states from "+c.Manager.ControlTool+" status")
		} else {
			ev = append(ev, c.Manager.ControlTool+" status: "+err.Error())
		}
	}
	if down := states.Down(); len(down) > 0 {
		return crit("daemon(s) down (1017): "+strings.Join(down, ", "), daemonsDownFix(c, down), append(ev, errSummary(apiErr))...)
	}
	return crit("daemons not ready (1017): "+errSummary(apiErr), "wait a minute after a restart (siemctl health again); if it persists: siemctl services restart manager", ev...)
}

// daemonsDownFix is the real fix for failed or stopped basic daemons
// ("wazuh-analysisd (failed)"): their own error in ossec.log, a
// configuration check for analysisd (rules and decoders), then a restart.
func daemonsDownFix(c *config.Config, down []string) string {
	logFile := filepath.Join(c.Manager.InstallDir, "logs", "ossec.log")
	var names []string
	var steps []string
	for _, d := range down {
		name, _, _ := strings.Cut(d, " ")
		names = append(names, name)
	}
	steps = append(steps, fmt.Sprintf("look at %s for the error of %s (grep -E '%s' %s | tail)", logFile, strings.Join(names, ", "),
		strings.Join(names, "|"), logFile))
	for _, n := range names {
		if strings.HasSuffix(n, "-analysisd") {
			steps = append(steps, fmt.Sprintf("check the rules, decoders and ossec.conf: %s -t (or siemctl rules check)",
				filepath.Join(c.Manager.InstallDir, "bin", n)))
		}
	}
	steps = append(steps, fmt.Sprintf("fix it, then %s restart (or siemctl services restart manager)",
		filepath.Join(c.Manager.InstallDir, "bin", c.Manager.ControlTool)))
	return strings.Join(steps, "; ")
}

// managerAPIFix proposes the fix for a manager API that did not answer,
// following the unit's state: an active unit with a slow API is not a
// reason to start anything (look at the API log and the load, retry with
// more time); otherwise the "units inactive" verdict's fix (start a stopped
// unit, restart a failed one, install a missing one).
func managerAPIFix(ctx context.Context, e *Env, err error) (string, []string) {
	fix := fixFor(err, "manager", "manager.ca_file", "manager.username")
	slow := errors.Is(err, netclient.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
	if !slow && !errors.Is(err, netclient.ErrUnreachable) {
		return fix, nil
	}
	c := e.Stack.Config.Manager
	apiLog := filepath.Join(c.InstallDir, "logs", "api.log")
	u, known := componentUnit(ctx, e, "manager")
	if !known {
		if slow {
			return fmt.Sprintf("siemctl services status manager: if %s is active the API is slow (look at %s and the host's load, retry with a longer --timeout), else siemctl services start manager", c.Unit, apiLog), nil
		}
		return fix, nil
	}
	ev := []string{"unit " + unitLine(u.Status)}
	switch {
	case u.Active && slow:
		return fmt.Sprintf("the unit is active but its API is slow: look at %s and the host's load (top), then retry with a longer --timeout (e.g. --timeout 30s)", apiLog), ev
	case u.Active:
		return fmt.Sprintf("the unit is active but nothing answers on %s: look at %s (did the API start?), then siemctl services restart manager", c.APIURL, apiLog), ev
	}
	if rep, ok := unitDiagnosis(ctx, e, u); ok {
		return rep.Fix(), append(ev, rep.Lines()...)
	}
	return u.Fix() + " (then siemctl services status manager)", ev
}

func checkManagerConfig(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	conf := c.Manager.InstallDir + "/etc/ossec.conf"
	fix := "fix " + conf + " at the reported element, then: siemctl services restart manager"
	if e.Stack.Manager != nil {
		// Ask directly (no reachability round trip first); on any failure
		// fall back to the control tool, which works with the API down.
		if v, err := e.Stack.Manager.ValidateConfig(ctx); err == nil {
			if v.OK {
				return ok("configuration valid (API validation)")
			}
			return crit("configuration invalid: "+firstOr(v.Errors, "see the manager log"), fix, v.Errors...)
		}
	}
	if !c.Runs("manager") {
		return unknown("not checked: the manager API did not validate the configuration and the manager is not on this host (no configuration check tool here)", "see manager.api, or run siemctl health on a manager host")
	}
	if e.Stack.Tools == nil {
		return unknown("not checked: manager API down and no configuration check tool", "see manager.api")
	}
	check := manager.Tools{InstallDir: c.Manager.InstallDir, ControlName: c.Manager.ControlTool, ConfigCheck: c.Manager.ConfigCheck}.ConfigCheckCommand()
	res, err := e.Stack.Tools.ControlCheck(ctx)
	if err != nil {
		return unknown("cannot run the configuration check: "+err.Error(), "run "+check+" by hand (manager.config_check)")
	}
	if res.OK {
		return ok("configuration valid (" + check + ")")
	}
	var ev []string
	for _, p := range res.Problems {
		ev = append(ev, p.String())
	}
	return crit("configuration invalid: "+firstOr(ev, "see the control tool"), fix, ev...)
}

func firstOr(s []string, d string) string {
	if len(s) == 0 {
		return d
	}
	return s[0]
}

func checkAgents(ctx context.Context, e *Env) Result {
	if e.Stack.Manager == nil {
		return noClient("manager", e.Stack.ManagerErr, false)
	}
	sum, err := e.Stack.Manager.AgentsSummary(ctx)
	if err != nil {
		return depFailed(ctx, e, "manager agent summary", err)
	}
	cn := sum.Connection
	summary := fmt.Sprintf("%d agents: %d active, %d disconnected, %d never connected, %d pending", cn.Total, cn.Active, cn.Disconnected, cn.NeverConnected, cn.Pending)
	metrics := map[string]float64{"active": float64(cn.Active), "disconnected": float64(cn.Disconnected), "never_connected": float64(cn.NeverConnected), "pending": float64(cn.Pending), "total": float64(cn.Total)}
	var problems, fixes []string
	info, _ := managerInfo(ctx, e)
	if mv, err := manager.ParseVersion(info.APIVersion); err == nil {
		newer, err := fleet.AgentsNewerThan(ctx, e.Stack.Manager, mv, "the manager")
		if err != nil {
			return warn(summary+"; cannot list agent versions: "+errSummary(err), "siemctl agents outdated")
		}
		if !newer.OK() {
			problems = append(problems, newer.Problem())
			fixes = append(fixes, "upgrade the manager first, or reinstall those agents at "+mv.String()+" (siemctl agents outdated)")
		}
	}
	// A few disconnected agents are normal in a fleet (laptops, retired
	// hosts); most of them at once points at the manager or the network.
	connected := cn.Active + cn.Disconnected
	if cn.Disconnected > 0 && cn.Disconnected*2 > connected {
		problems = append(problems, fmt.Sprintf("%d of %d enrolled agents disconnected (more than half: manager or network problem?)", cn.Disconnected, connected))
		fixes = append(fixes, "siemctl agents list --status disconnected")
	}
	r := ok(summary)
	if len(problems) > 0 {
		r = warn(summary+"; "+strings.Join(problems, "; "), strings.Join(fixes, "; "))
	}
	r.Metrics = metrics
	return r
}

// ---- stack -----------------------------------------------------------------

func checkVersions(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	installed, err := packageVersions(ctx, e)
	if err != nil {
		return unknown("cannot read installed package versions: "+err.Error(), "dpkg-query -W "+c.Indexer.Package+" "+c.Manager.Package+" "+c.Dashboard.Package)
	}
	// This host's packages, and the versions its own services report.
	f := versions.Facts{Packages: c.HostPackageNames(), Installed: installed}
	if e.Stack.Manager != nil && c.Runs("manager") {
		if info, err := managerInfo(ctx, e); err == nil {
			f.ManagerAPI = info.APIVersion
		}
	}
	if e.Stack.Dashboard != nil && c.Runs("dashboard") {
		if d, err := Shared(ctx, e, keyDashboard, e.Stack.Dashboard); err == nil {
			f.Dashboard = d.Version
		}
	}
	v := versions.Judge(f)
	evidence := append(v.Evidence, notHere(c)...)
	if !v.OK() {
		return crit(strings.Join(v.Problems, "; "), v.Fix, evidence...)
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
	var ev []string
	for _, h := range rep.Hops {
		mark := "ok"
		if !h.OK {
			mark = "FAILED"
		}
		line := fmt.Sprintf("%s: %s after %s", h.Name, mark, h.Latency.Round(time.Millisecond))
		if h.Detail != "" {
			line += " (" + h.Detail + ")"
		}
		ev = append(ev, line)
	}
	if !rep.OK {
		return crit("probe event did not arrive: broken at "+rep.BrokenAt, probeFix(rep.BrokenAt), ev...)
	}
	var total time.Duration
	if len(rep.Hops) > 0 {
		total = rep.Hops[len(rep.Hops)-1].Latency
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

// ---- dashboard, shipper ----------------------------------------------------

func checkDashboard(ctx context.Context, e *Env) Result {
	if e.Stack.Dashboard == nil {
		return unknown("not checked", "")
	}
	insecureNote(e, e.Stack.Config.Dashboard.Insecure, "dashboard", "dashboard")
	d, err := Shared(ctx, e, keyDashboard, e.Stack.Dashboard)
	if err != nil {
		return crit(errSummary(err), fixFor(err, "dashboard", "dashboard.ca_file", "dashboard"), e.Stack.Config.Dashboard.URL)
	}
	switch {
	case d.NotReady != "":
		return dashboardNoIndexer(ctx, e, fmt.Sprintf("dashboard not ready: HTTP %d %q", 503, d.NotReady))
	case d.State == "red" || d.OpenSearch != "":
		msg := d.OpenSearch
		if msg == "" {
			msg = "overall red"
		}
		return dashboardNoIndexer(ctx, e, "dashboard /api/status "+d.State+": "+msg)
	}
	state := ""
	if d.State != "" {
		state = ", /api/status " + d.State
	}
	switch d.Status {
	case 200:
		return ok("GET / answered 200" + state)
	case 302:
		return ok("GET / answered 302 to " + d.Location + state)
	}
	return crit(fmt.Sprintf("GET / answered %d (want 200 or 302)", d.Status), "siemctl services restart dashboard; check its log")
}

// dashboardNoIndexer explains a dashboard that cannot use its indexer: the indexer down (its own
// check has the fix), the dashboard's opensearch.hosts not answering or its TLS not verifying
// (from this host, with the dashboard's own CA), or else its own credentials refused.
func dashboardNoIndexer(ctx context.Context, e *Env, summary string) Result {
	c := e.Stack.Config
	if _, err := indexerInfo(ctx, e); err != nil && e.Stack.Indexer != nil && !errors.Is(err, netclient.ErrUnauthorized) {
		return crit(summary+"; the indexer itself is not answering ("+errSummary(err)+")", "start the indexer first (see indexer.api), then the dashboard connects by itself")
	}
	cause, fix, evidence := hostcheck.DashboardReachCause(ctx, c.Dashboard.ConfigDir, c.Indexer.URL)
	return crit(summary+": "+cause, fix, evidence...)
}

func checkShipper(ctx context.Context, e *Env) Result {
	if !e.Stack.Config.Runs("shipper") {
		return notApplicable // its config is on the hosts that run it
	}
	if e.Stack.Shipper == nil {
		return unknown("not checked", "")
	}
	bin := e.Stack.Config.Shipper.Binary
	// test config and test output run at once: the output test is the real
	// tool's own dial, TLS handshake (its CA) and login (its keystore), and
	// costs one more process, not a wait; a dead output host costs the
	// check's deadline once.
	type outAns struct {
		ok    bool
		lines []string
		err   error
	}
	outc := make(chan outAns, 1)
	go func() {
		oko, lines, err := e.Stack.Shipper.TestOutput(ctx)
		outc <- outAns{oko, lines, err}
	}()
	okc, msg, err := e.Stack.Shipper.TestConfig(ctx)
	if err != nil {
		return crit("cannot run "+bin+" test config: "+err.Error(), "is the shipper installed? siemctl services status shipper")
	}
	if !okc {
		return crit("config invalid: "+msg, "fix "+e.Stack.Config.Shipper.ConfigDir+" (run "+bin+" test config)", msg)
	}
	var out outAns
	select {
	case out = <-outc:
	case <-ctx.Done():
		return unknown("test config OK; test output did not finish before the deadline (output hosts not answering?)", "run "+bin+" test output")
	}
	if out.err != nil {
		if ctx.Err() != nil {
			return unknown("test config OK; test output did not finish before the deadline (output hosts not answering?)", "run "+bin+" test output")
		}
		return crit("cannot run "+bin+" test output: "+out.err.Error(), "siemctl services status shipper")
	}
	if !out.ok {
		return crit("output unreachable: test output failed: "+lastFailure(out.lines), "check the indexer (indexer.api) and the shipper's output section (output.elasticsearch.hosts in "+filepath.Join(e.Stack.Config.Shipper.ConfigDir, "filebeat.yml")+"), then run "+bin+" test output", out.lines...)
	}
	return ok("test config OK, test output OK", out.lines...)
}

func lastFailure(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "ERROR") {
			return strings.TrimSpace(lines[i])
		}
	}
	return "see the transcript"
}

// ---- certs, secrets ----------------------------------------------------------

func checkCerts(ctx context.Context, e *Env) Result {
	if e.Stack.Certs == nil {
		return unknown("not checked", "")
	}
	certs, err := e.Stack.Certs(ctx)
	if err != nil {
		return unknown("cannot read certificates: "+err.Error(), "")
	}
	now := e.now()
	var expired, soon, evidence, unread []string
	minDays := -1.0
	read := 0
	for _, c := range certs {
		if c.Err != nil {
			unread = append(unread, c.Component)
			evidence = append(evidence, fmt.Sprintf("%s %s: %s", c.Component, c.Source, errSummary(c.Err)))
			continue
		}
		read++
		days := c.NotAfter.Sub(now).Hours() / 24
		if minDays < 0 || days < minDays {
			minDays = days
		}
		line := fmt.Sprintf("%s %s: %s expires %s (%d days)", c.Component, c.Source, c.Subject, c.NotAfter.UTC().Format("2006-01-02"), int(days))
		evidence = append(evidence, line)
		switch {
		case days < 0:
			expired = append(expired, c.Component+" "+c.Source)
		case days < 30:
			soon = append(soon, fmt.Sprintf("%s %s (%d days)", c.Component, c.Source, int(days)))
		}
	}
	r := ok(fmt.Sprintf("%d certificate(s), next expiry in %d days", read, int(minDays)), evidence...)
	if minDays >= 0 {
		r.Metrics = map[string]float64{"min_days_left": minDays}
	}
	// The indexer's node certificate judged against every client's CA:
	// the cause and the side that must change.
	if causes := indexerTLSCauses(ctx, e); len(causes) > 0 {
		var sums, fixes []string
		for _, c := range causes {
			sums, fixes = append(sums, c.Summary), append(fixes, c.Fix)
			r.Evidence = append(r.Evidence, c.Evidence...)
		}
		r.Status, r.Summary, r.Fix = Crit, strings.Join(sums, "; "), strings.Join(dedupe(fixes), "; ")
		return r
	}
	switch {
	case len(expired) > 0:
		r.Status, r.Summary = Crit, "expired: "+strings.Join(expired, ", ")
		r.Fix = "renew the certificates (wazuh-certs-tool / your PKI) and restart the component"
	case len(soon) > 0:
		r.Status, r.Summary = Warn, "expiring within 30 days: "+strings.Join(soon, ", ")
		r.Fix = "renew the certificates before they expire"
	case len(unread) > 0:
		r.Status = Unknown
		r.Summary = "could not read the certificate of " + strings.Join(unread, ", ")
		if read > 0 {
			r.Summary += fmt.Sprintf("; %d other(s) fine, next expiry in %d days", read, int(minDays))
		}
		r.Fix = "see the component's own check (indexer.api, manager.api, dashboard)"
	case len(certs) == 0:
		r.Summary = "no TLS endpoint or certificate file to check"
	}
	return r
}

func checkSecrets(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	var problems, fixes, evidence []string
	for name, sec := range map[string]config.Secret{"indexer": c.Indexer.Secret, "manager": c.Manager.Secret} {
		mode, loose, found := sec.FileMode()
		if !found {
			continue
		}
		evidence = append(evidence, fmt.Sprintf("%s password file %s mode %#o", name, sec.PasswordFile, mode))
		if loose {
			problems = append(problems, fmt.Sprintf("%s.password_file %s is readable by group/others (%#o)", name, sec.PasswordFile, mode))
			fixes = append(fixes, "chmod 600 "+sec.PasswordFile)
		}
	}
	for key, insecure := range map[string]bool{"indexer.insecure": c.Indexer.Insecure, "manager.insecure": c.Manager.Insecure, "dashboard.insecure": c.Dashboard.Insecure} {
		if insecure {
			problems = append(problems, key+": true (TLS not verified)")
			fixes = append(fixes, "set "+strings.TrimSuffix(key, ".insecure")+".ca_file and remove "+key)
		}
	}
	probeErr := error(nil)
	if e.Stack.DefaultCredentials != nil {
		defs, err := e.Stack.DefaultCredentials(ctx, e.Deep)
		evidence = append(evidence, defs.Evidence...)
		if err != nil {
			probeErr = err
			evidence = append(evidence, "default-credential probe: "+err.Error())
		}
		for _, d := range defs.Found {
			problems = append(problems, "default credentials accepted: "+d)
			fixes = append(fixes, "change the default password ("+strings.Fields(d)[0]+")")
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return warn(strings.Join(problems, "; "), strings.Join(dedupe(fixes), "; "), evidence...)
	}
	if probeErr != nil {
		return unknown("secret files private, TLS verification on; "+probeErr.Error(), "see indexer.api and manager.api", evidence...)
	}
	tlsWord := "TLS verification on"
	if causes := indexerTLSCauses(ctx, e); len(causes) > 0 {
		tlsWord += ", but the indexer certificate fails it (see certs)"
	}
	return ok("no default credentials, secret files private, "+tlsWord, evidence...)
}

// indexerTLSCauses is the run's one judgement of the indexer's node
// certificate (nil: fine, or not judged).
func indexerTLSCauses(ctx context.Context, e *Env) []hostcheck.TLSCause {
	if e.Stack.IndexerTLS == nil {
		return nil
	}
	causes, err := Shared(ctx, e, keyIndexerTLS, e.Stack.IndexerTLS)
	if err != nil {
		return nil
	}
	return causes
}
