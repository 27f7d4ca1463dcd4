package steps

// Recovery at volume. After a start an OpenSearch node brings its primary shards back from its
// own disk cluster.routing.allocation.node_initial_primaries_recoveries (default 4) at a time,
// and the primaries of a snapshot restore count against the same throttle
// (ThrottlingAllocationDecider); peer recoveries (replicas, relocations: a cluster of several
// nodes) against node_concurrent_recoveries (default 2). With a thousand daily indices that
// throttle decides how long security init (securityadmin waits for a yellow cluster), the
// cluster health gate and a snapshot restore wait.
//
//   - indexer.primaries_recoveries raises the settings while the node runs, after recording in
//     the journal what was there (once per run: a resumed step and a rollback seeded with the
//     upgrade's record keep the value before the upgrade), and with restore: true puts back
//     exactly that (null when it was unset). Its raise also counts the node's primary shards
//     before the indexer stops (rundata.KeyIndexerPrimaries).
//   - restore.indexer_snapshot raises them the same way (its recoveries parameter) right before
//     it restores into the empty cluster of the old version.
//   - The kinds that wait for the primaries (indexer.security_apply, gate.cluster_health,
//     restore.indexer_snapshot) take timeout_per_primary: their deadline is the runbook timeout
//     plus that much per primary shard counted (engine.Budgeter).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/rundata"
)

// primariesRecord is what rundata.KeyIndexerPrimaries holds.
type primariesRecord struct {
	Primaries int    `json:"primaries"` // active primary shards (the cluster was at least yellow: all of them)
	Status    string `json:"status"`
}

type recoveriesParams struct {
	Value      int  `yaml:"value"`      // node_initial_primaries_recoveries
	Concurrent int  `yaml:"concurrent"` // node_concurrent_recoveries
	Restore    bool `yaml:"restore"`
	// MinPrimaries: raise only when the node holds at least this many primary shards (0: always).
	// Below it the default throttle brings them back within seconds, and raising it costs time: the
	// security plugin's first configuration load after the start runs while every primary recovers
	// at once, misses its own index, and tries again only about 13 s later.
	MinPrimaries int `yaml:"min_primaries"`
}

func (p *recoveriesParams) Validate() error {
	raise := p.Value != 0 || p.Concurrent != 0
	if p.Restore == raise {
		return fmt.Errorf("give value and/or concurrent (1-1000: raise) or restore: true (put back what the run found), not both")
	}
	if p.MinPrimaries < 0 || (p.Restore && p.MinPrimaries != 0) {
		return fmt.Errorf("min_primaries %d: want 0 or more, with value and/or concurrent only", p.MinPrimaries)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"value", p.Value}, {"concurrent", p.Concurrent}} {
		if v.n != 0 && (v.n < 1 || v.n > 1000) {
			return fmt.Errorf("%s %d: want 1 to 1000", v.name, v.n)
		}
	}
	return nil
}

func (p *recoveriesParams) want() map[string]int {
	w := map[string]int{}
	if p.Value > 0 {
		w[cluster.KeyInitialPrimaries] = p.Value
	}
	if p.Concurrent > 0 {
		w[cluster.KeyConcurrentRecoveries] = p.Concurrent
	}
	return w
}

func (p *recoveriesParams) Describe(pc engine.PlanContext) []string {
	if p.Restore {
		return []string{
			"PUT /_cluster/settings {\"persistent\":{<each recovery setting the run raised>:<its value recorded before the run, null when it was unset>}} (skipped when the run raised none)",
			"GET /_cluster/settings?flat_settings=true (read back)",
		}
	}
	why := "the node recovers that many primaries from its disk at once after its start (thousands of daily indices come back sooner)"
	if p.MinPrimaries > 0 {
		why = fmt.Sprintf("only when the node holds at least %d primary shards: %s", p.MinPrimaries, why)
	}
	return append([]string{
		"GET /_cluster/health (record the active primary shards: the steps waiting for them get timeout_per_primary for each)"},
		cluster.DescribeRaise(p.want(), why)...)
}

func recoveriesKind() Kind {
	return engine.Define(Spec[*recoveriesParams]{Name: "indexer.primaries_recoveries", Estimate: fixed[*recoveriesParams](time.Second),
		New: func() *recoveriesParams { return &recoveriesParams{} }, Run: runPrimariesRecoveries})
}

// runPrimariesRecoveries counts the node's primaries and raises the recovery settings, or puts
// back what the run recorded. The steps run while the node answers: before its stop, after
// indexer/settled, after finally/allocation-all (which waits for it).
func runPrimariesRecoveries(ctx context.Context, env Env, p *recoveriesParams) (engine.Outcome, error) {
	_, ix, err := indexerOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	if p.Restore {
		return restoreRecoveries(ctx, env, ix)
	}
	n, err := recordPrimaries(ctx, env, ix)
	if err != nil {
		return engine.Outcome{}, err
	}
	if n < p.MinPrimaries {
		return engine.Outcome{Message: fmt.Sprintf("SKIPPED: %d primary shards, fewer than %d: the recovery settings stay as they are (the default throttle brings them back within seconds)", n, p.MinPrimaries),
			Data: map[string]any{"primaries": n}}, nil
	}
	out, err := raiseRecoveries(ctx, env, ix, p.want())
	if err != nil {
		return engine.Outcome{}, err
	}
	out.Message = fmt.Sprintf("%d primary shards; %s", n, out.Message)
	out.Data["primaries"] = n
	return out, nil
}

// recordPrimaries records the node's active primary shards once per run (the first count is the
// one before the indexer stopped) and returns the recorded count.
func recordPrimaries(ctx context.Context, env Env, ix IndexerAPI) (int, error) {
	var rec primariesRecord
	if ok, err := env.Get(rundata.KeyIndexerPrimaries, &rec); err != nil || ok {
		return rec.Primaries, err
	}
	h, err := ix.Health(ctx, indexer.HealthRequest{})
	if err != nil {
		return 0, fmt.Errorf("count the primary shards: %w", err)
	}
	rec = primariesRecord{Primaries: h.ActivePrimaryShards, Status: h.Status}
	return rec.Primaries, env.Set(rundata.KeyIndexerPrimaries, rec)
}

// loadRecoveries reads the run's record (empty when none).
func loadRecoveries(env Env) (cluster.Recoveries, error) {
	rec := cluster.Recoveries{}
	_, err := env.Get(rundata.KeyPrimariesRecoveries, &rec)
	return rec, err
}

// raiseRecoveries records every recovery setting the run has not recorded yet as it is now,
// then sets want (setting → value) persistently (the value must hold when the node starts
// again) and reads it back.
func raiseRecoveries(ctx context.Context, env Env, ix IndexerAPI, want map[string]int) (engine.Outcome, error) {
	rec, err := loadRecoveries(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	before, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("read the recovery settings: %w", err)
	}
	upd, changes := cluster.PlanRaise(rec, before.Persistent, want)
	if err := env.Set(rundata.KeyPrimariesRecoveries, rec); err != nil {
		return engine.Outcome{}, err
	}
	if err := cluster.PutRecoveries(ctx, ix, upd); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: strings.Join(changes, ", ") + " (recorded; the restore steps put it back)", Data: map[string]any{"settings": rec}}, nil
}

// restoreRecoveries puts back every setting the run raised, as recorded before the run.
func restoreRecoveries(ctx context.Context, env Env, ix IndexerAPI) (engine.Outcome, error) {
	rec, err := loadRecoveries(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	if len(rec.Raised()) == 0 {
		return engine.Outcome{Message: "SKIPPED: this run raised no recovery setting"}, nil
	}
	now, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("read the recovery settings: %w", err)
	}
	upd, back := cluster.PlanRestore(rec, now.Persistent)
	data := map[string]any{"settings": rec}
	if len(upd) == 0 {
		return engine.Outcome{Message: "already back: " + strings.Join(back, ", "), Data: data}, nil
	}
	if err := cluster.PutRecoveries(ctx, ix, upd); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: "back to " + strings.Join(back, ", "), Data: data}, nil
}

// --- the primaries budget -------------------------------------------------------------------

// maxPrimariesExtra bounds the extra time a step gets for the primaries.
const maxPrimariesExtra = 24 * time.Hour

// primariesAllowance is the parameter of the kinds that wait while the node brings its primary
// shards back: timeout_per_primary adds that much per primary shard to the step's runbook
// timeout (engine.Budgeter).
type primariesAllowance struct {
	TimeoutPerPrimary time.Duration `yaml:"timeout_per_primary"`
}

func (a primariesAllowance) validate() error {
	if a.TimeoutPerPrimary < 0 || a.TimeoutPerPrimary > time.Minute {
		return fmt.Errorf("timeout_per_primary %s: want 0 to 1m", a.TimeoutPerPrimary)
	}
	return nil
}

// describe is the allowance's plan line (none without it).
func (a primariesAllowance) describe(lines []string) []string {
	if a.TimeoutPerPrimary <= 0 {
		return lines
	}
	return append(lines, fmt.Sprintf("deadline: the step's timeout + %s per primary shard (counted before the indexer stopped; else the indexer's active primaries when the step starts)", a.TimeoutPerPrimary))
}

// budget is the extra time for the primaries the step waits for; snapshot counts the shards of
// the run's snapshot first (what a restore brings back).
func (a primariesAllowance) budget(ctx context.Context, env Env, snapshot bool) (time.Duration, string, error) {
	per := a.TimeoutPerPrimary
	if per <= 0 {
		return 0, "", nil
	}
	n, src := primariesFor(ctx, env, snapshot)
	if n <= 0 {
		return 0, fmt.Sprintf("%s per primary shard, %s", per, src), nil
	}
	extra := min(time.Duration(n)*per, maxPrimariesExtra)
	return extra, fmt.Sprintf("%s × %d primary shards, %s", per, n, src), nil
}

// primariesFor is the number of primary shards a step waits for and where it comes from.
func primariesFor(ctx context.Context, env Env, snapshot bool) (int, string) {
	if snapshot {
		if b, err := backups(env); err == nil && b.IndexerSnapshot != nil && b.IndexerSnapshot.Shards > 0 {
			return b.IndexerSnapshot.Shards, "the shards of snapshot " + b.IndexerSnapshot.Name
		}
	}
	var rec primariesRecord
	if ok, err := env.Get(rundata.KeyIndexerPrimaries, &rec); err == nil && ok && rec.Primaries > 0 {
		return rec.Primaries, "counted before the indexer stopped"
	}
	_, ix, err := indexerOf(env)
	if err != nil {
		return 0, "count unknown: " + err.Error()
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	h, err := ix.Health(cctx, indexer.HealthRequest{})
	if err != nil {
		return 0, "count unknown: none recorded and the indexer does not answer now"
	}
	return h.ActivePrimaryShards, "active on the indexer now, none counted yet"
}

// Primaries is the number of primary shards a run's steps would be given time for, and where it
// comes from (the count the deadlines use), judged in env: plans estimate the wait with it.
func Primaries(ctx context.Context, env Env) (int, string) {
	return primariesFor(ctx, env, false)
}
