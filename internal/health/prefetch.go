package health

import "context"

// Keys of the shared probes.
const (
	keyIndexerInfo     = "indexer.info"
	keyIndexerHealth   = "indexer.health"
	keyIndexerSettings = "indexer.settings"
	keyIndexerShards   = "indexer.shards"
	keyIndexerNodes    = "indexer.nodes"
	keyManagerInfo     = "manager.info"
	keyManagerStatus   = "manager.status"
	keyPackages        = "packages"
	keyDashboard       = "dashboard.get"
	keyIndexerTLS      = "indexer.tls"
	keyUnitsConn       = "units.conn"
	keyUnits           = "units.status"
)

// prefetch starts every shared probe the selected checks need, at once, so
// that a check reading two of them waits for the slower, not for the sum.
// Only probes of selected checks run: `--check units` touches no API.
func prefetch(ctx context.Context, e *Env, checks []Check) {
	want := map[string]bool{}
	for _, c := range checks {
		for _, k := range c.Needs {
			want[k] = true
		}
	}
	start := func(key string, fn func(ctx context.Context)) {
		if want[key] {
			go fn(ctx)
		}
	}
	if e.Stack.Indexer.OK() {
		start(keyIndexerInfo, func(ctx context.Context) { indexerInfo(ctx, e) })
		start(keyIndexerHealth, func(ctx context.Context) { indexerHealth(ctx, e) })
		start(keyIndexerSettings, func(ctx context.Context) { indexerSettings(ctx, e) })
		start(keyIndexerShards, func(ctx context.Context) { indexerShards(ctx, e) })
		start(keyIndexerNodes, func(ctx context.Context) { indexerNodes(ctx, e) })
	}
	if e.Stack.Manager.OK() {
		start(keyManagerInfo, func(ctx context.Context) { managerInfo(ctx, e) })
		start(keyManagerStatus, func(ctx context.Context) { managerStatus(ctx, e) })
	}
	if e.Stack.Units != nil {
		start(keyUnits, func(ctx context.Context) { unitStates(ctx, e) })
	}
	if e.Stack.Packages.OK() {
		start(keyPackages, func(ctx context.Context) { packageVersions(ctx, e) })
	}
	if e.Stack.Dashboard != nil {
		start(keyDashboard, func(ctx context.Context) { Shared(ctx, e, keyDashboard, e.Stack.Dashboard) })
	}
}
