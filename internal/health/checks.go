package health

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/services"
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
		{ID: "indexer.data", Component: "indexer", Title: "the cluster holds the indices and documents of siemctl's last snapshot (same cluster UUID, path.data)", Run: withIndexer(checkIndexerData), Needs: []string{keyIndexerInfo}},
		{ID: "indexer.cluster", Component: "indexer", Title: "indexer cluster: every node present, one version, a cluster manager, heap and disk per node", Run: withIndexer(checkIndexerCluster), Needs: []string{keyIndexerInfo, keyIndexerHealth}},
		{ID: "manager.api", Component: "manager", Title: "manager API login, version, daemons ready", Run: checkManagerAPI, Needs: []string{keyManagerInfo, keyManagerStatus, keyUnits}},
		{ID: "manager.config", Component: "manager", Title: "manager configuration is valid", Run: checkManagerConfig, Needs: []string{keyManagerInfo}},
		{ID: "manager.cluster", Component: "manager", Title: "manager cluster: every node connected, one version, keepalives fresh, rulesets in sync", Run: checkManagerCluster, Needs: []string{keyManagerInfo}},
		{ID: "versions", Component: "stack", Title: "indexer, manager and dashboard at the same version", Run: checkVersions, Needs: []string{keyPackages, keyManagerInfo, keyDashboard, keyIndexerNodes}},
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
		return "initialise the security plugin: " + diagnose.SecurityApplyFix
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
		ix, err := e.Stack.Indexer.Get()
		if err != nil {
			return noClient("indexer", err, false)
		}
		return check(ctx, e, ix)
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
	return Shared(ctx, e, keyIndexerInfo, on(e.Stack.Indexer, IndexerAPI.Info))
}

// indexerNodes are the nodes' real OpenSearch versions (_nodes; GET / says 7.10.2).
func indexerNodes(ctx context.Context, e *Env) ([]indexer.NodeVersion, error) {
	return Shared(ctx, e, keyIndexerNodes, on(e.Stack.Indexer, IndexerAPI.NodesVersions))
}

func indexerHealth(ctx context.Context, e *Env) (indexer.Health, error) {
	return Shared(ctx, e, keyIndexerHealth, on(e.Stack.Indexer, func(ix IndexerAPI, ctx context.Context) (indexer.Health, error) {
		return ix.Health(ctx, indexer.HealthRequest{})
	}))
}

func indexerSettings(ctx context.Context, e *Env) (indexer.Settings, error) {
	return Shared(ctx, e, keyIndexerSettings, on(e.Stack.Indexer, func(ix IndexerAPI, ctx context.Context) (indexer.Settings, error) {
		return ix.Settings(ctx, true)
	}))
}

func indexerShards(ctx context.Context, e *Env) ([]indexer.Shard, error) {
	return Shared(ctx, e, keyIndexerShards, on(e.Stack.Indexer, IndexerAPI.CatShards))
}

func managerStatus(ctx context.Context, e *Env) (manager.DaemonStates, error) {
	return Shared(ctx, e, keyManagerStatus, on(e.Stack.Manager, ManagerAPI.ManagerStatus))
}

func managerInfo(ctx context.Context, e *Env) (manager.APIInfo, error) {
	return Shared(ctx, e, keyManagerInfo, on(e.Stack.Manager, ManagerAPI.Info))
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
		pq, err := e.Stack.Packages.Get()
		if err != nil {
			return nil, fmt.Errorf("no package manager: %s", errString(err))
		}
		return packages.ByComponent(ctx, pq, e.Stack.Config.HostPackageNames())
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
