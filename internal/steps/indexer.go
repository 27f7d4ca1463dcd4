package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/secadmin"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/process"
)

type allocationParams struct {
	Value string `yaml:"value"`
}

func (p *allocationParams) Describe(pc engine.PlanContext) []string {
	return []string{
		fmt.Sprintf(`PUT /_cluster/settings {"persistent":{"%s":"%s"}} (acknowledged; a transient override is reset)`, indexer.KeyAllocationEnable, p.Value),
		"GET /_cluster/settings?flat_settings=true (read back: effective value " + p.Value + ")",
	}
}

func (p *allocationParams) Validate() error {
	if p.Value != "primaries" && p.Value != "all" {
		return fmt.Errorf("value %q: want primaries or all", p.Value)
	}
	return nil
}

func indexerKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*allocationParams]{Name: "indexer.allocation", Estimate: fixed[*allocationParams](time.Second),
			New: func() *allocationParams { return &allocationParams{} }, Run: runAllocation,
			Skip: func(ctx context.Context, env Env, p *allocationParams) (string, bool, error) {
				done, err := allocationIs(ctx, env, p.Value)
				if err != nil || !done {
					return "", false, err
				}
				return "allocation already " + p.Value, true, nil
			},
			Verify: func(ctx context.Context, env Env, p *allocationParams) (bool, error) {
				return allocationIs(ctx, env, p.Value)
			}}),
		engine.Define(Spec[*noParams]{Name: "indexer.flush", Estimate: fixed[*noParams](2 * time.Second), Run: runFlush,
			New: simple(func(*Planning) []string { return []string{"POST /_flush"} })}),
		engine.Define(Spec[*noParams]{Name: "indexer.flush_synced", Estimate: fixed[*noParams](2 * time.Second), Run: runSyncedFlush,
			New: simple(func(*Planning) []string {
				return []string{"POST /_flush/synced (409 = partial: tolerated; unsupported: POST /_flush)"}
			})}),
		engine.Define(Spec[*securityParams]{Name: "indexer.security_apply", Estimate: estimateSecurityApply, Run: runSecurityApply,
			New: func() *securityParams { return &securityParams{} },
			Budget: func(ctx context.Context, env Env, p *securityParams) (time.Duration, string, error) {
				return p.budget(ctx, env, false)
			}}),
	}
}

// securityParams are indexer.security_apply's: the tool waits for a yellow cluster, i.e. every
// primary back, so its deadline grows with them (timeout_per_primary).
type securityParams struct {
	primariesAllowance `yaml:",inline"`
}

func (p *securityParams) Validate() error { return p.validate() }

func (p *securityParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	return p.describe([]string{"GET /_cluster/health (the node answers)",
		strings.Join(securityInit(pl), " ") + " (no options: upload the security config directory; the tool waits for a yellow cluster, every primary shard back)"})
}

func securityInit(pl *Planning) []string {
	if c := pl.cfg(); c != nil && len(c.Indexer.SecurityInit) > 0 {
		return c.Indexer.SecurityInit
	}
	return []string{"<indexer.security_init>"}
}

// indexerOf returns the kinds' dependencies and the indexer client.
func indexerOf(env Env) (*Deps, IndexerAPI, error) {
	d := env.Deps()
	ix, err := d.indexer()
	return d, ix, err
}

// allocationIs reads back cluster.routing.allocation.enable.
func allocationIs(ctx context.Context, env Env, want string) (bool, error) {
	_, ix, err := indexerOf(env)
	if err != nil {
		return false, err
	}
	st, err := cluster.Allocation(ctx, ix)
	if err != nil {
		return false, err
	}
	return st.Value == want, nil
}

// await is the kinds' poll loop as the operations' Await.
func await(env Env, d *Deps) cluster.Await {
	return func(ctx context.Context, what string, ready func() (bool, error)) error {
		return wait(ctx, env, d.poll(), what, ready)
	}
}

func runAllocation(ctx context.Context, env Env, p *allocationParams) (engine.Outcome, error) {
	d, ix, err := indexerOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	// Right after a (re)start the node may not answer yet: wait for it.
	ch, err := cluster.SetAllocation(ctx, ix, p.Value, cluster.SetOptions{Await: await(env, d)})
	if err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("%s: %s → %s (acknowledged, read back)", indexer.KeyAllocationEnable, ch.Before.Value, ch.After.Value)}, nil
}

func runFlush(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	rep, err := flush(ctx, env, cluster.FlushOptions{Plain: true, Strict: true})
	if err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("flushed %d/%d shards", rep.Flush.Successful, rep.Flush.Total)}, nil
}

func runSyncedFlush(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	rep, err := flush(ctx, env, cluster.FlushOptions{Synced: true})
	switch {
	case err != nil:
		return engine.Outcome{}, err
	case rep.SyncedUnsupported:
		return engine.Outcome{Message: fmt.Sprintf("synced flush not supported; flushed %d/%d shards", rep.Flush.Successful, rep.Flush.Total)}, nil
	case rep.SyncedPartial:
		return engine.Outcome{Message: fmt.Sprintf("synced flush partial (tolerated): %d/%d shards, %d failed", rep.Synced.Successful, rep.Synced.Total, rep.Synced.Failed)}, nil
	}
	return engine.Outcome{Message: fmt.Sprintf("synced flush %d/%d shards", rep.Synced.Successful, rep.Synced.Total)}, nil
}

func flush(ctx context.Context, env Env, opts cluster.FlushOptions) (cluster.FlushReport, error) {
	_, ix, err := indexerOf(env)
	if err != nil {
		return cluster.FlushReport{}, err
	}
	return cluster.Flush(ctx, ix, opts)
}

// securityTool runs the configured security init tool through d.Exec.
func securityTool(d *Deps) secadmin.Runner {
	if d.Exec == nil {
		return process.RunnerFunc(func(context.Context, []string, string, ...string) ([]byte, []byte, int, error) {
			return nil, nil, -1, errors.New("no program runner configured")
		})
	}
	return d.Exec
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	return strings.Join(keep, " | ")
}

// waitIndexerAnswers waits, until the step's deadline, for the node an
// earlier step started to answer HTTP at all (503 "security not
// initialized" counts: the tool fixes exactly that): the services
// operation's readiness wait, which fails at once when the unit died.
func waitIndexerAnswers(ctx context.Context, env Env, d *Deps) error {
	ix, err := d.indexer()
	if err != nil {
		return err
	}
	r, _, err := unitRunner(ctx, env)
	if err != nil {
		return err
	}
	r.Ready = func(ctx context.Context, _ services.Component) error {
		_, err := ix.Health(ctx, indexer.HealthRequest{})
		if errors.Is(err, indexer.ErrSecurityNotInitialized) {
			return nil
		}
		return err
	}
	if err := r.AwaitReady(ctx, (&unitParams{}).components(ctx, d, []string{"indexer"}, true)[0]); err != nil {
		return fmt.Errorf("wait for the indexer to answer HTTP: %w", err)
	}
	return nil
}

// securityLoadPolls bounds how long the security step lets the plugin load
// its configuration from its own index after a start before it runs the tool:
// 20 polls, 20 s by default, past the plugin's own retry (13-15 s after start).
const securityLoadPolls = 20

// awaitSecurityLoad gives the security plugin securityLoadPolls polls to load
// its configuration from the index it already holds, which is what a node
// restarted on a new version does by itself within seconds. Starting the tool
// (a JVM that takes both cores of a small host for seconds) the moment the
// node answers HTTP slowed the recovery of the security index's shard, the
// plugin's first read found no shard, and its retry came some 13 s later (3 of
// 11 benchmarked upgrades, 0 of 11 bare restarts). A node that is still not
// initialised after the grace (no security index yet) gets the tool as before,
// and so, at once, does one whose log (where readable here) shows that the
// plugin's read failed: its next try comes some 13 s later.
func awaitSecurityLoad(ctx context.Context, env Env, d *Deps) error {
	ix, err := d.indexer()
	if err != nil {
		return err
	}
	grace := securityLoadPolls * d.poll()
	gctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	start := time.Now()
	var other error
	// Where the node's log is readable here, a first read that failed is seen in it at once:
	// the tool then initialises the plugin within seconds instead of its retry some 13 s later.
	var logFile, failed string
	if d.Config != nil {
		logFile = diagnose.IndexerLogFile(d.Config.Indexer.ConfigDir)
	}
	polls := 0
	err = wait(gctx, env, d.poll()/4, "the security plugin to load its configuration", func() (bool, error) {
		_, err := ix.Health(gctx, indexer.HealthRequest{})
		if err == nil {
			return true, nil
		}
		if errors.Is(err, indexer.ErrSecurityNotInitialized) && logFile != "" && polls%4 == 0 {
			if line, _ := diagnose.SecurityLoadFailed(logFile); line != "" {
				failed = line
				return true, nil
			}
		}
		polls++
		if errors.Is(err, indexer.ErrSecurityNotInitialized) || cluster.NotAnswering(err) {
			return false, nil
		}
		// Any other answer (a refused login, a blocked cluster) is for the tool and the
		// wait after it to report.
		other = err
		return true, nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if other != nil {
		return nil
	}
	if failed != "" {
		env.Logger().Info("the security plugin's first load failed: running the tool now, not after its retry", "after", time.Since(start).Round(time.Millisecond), "log", failed)
		return nil
	}
	if err != nil {
		env.Logger().Info("security plugin not initialised by itself, running the tool", "waited", grace)
		return nil
	}
	env.Logger().Info("security plugin loaded its configuration", "after", time.Since(start).Round(time.Millisecond))
	return nil
}

// runSecurityApply is indexer.security_apply, after a start on a new version:
// the node holds its security index, so the plugin gets its grace first.
func runSecurityApply(ctx context.Context, env Env, _ *securityParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	if err := waitIndexerAnswers(ctx, env, d); err != nil {
		return engine.Outcome{}, err
	}
	if err := awaitSecurityLoad(ctx, env, d); err != nil {
		return engine.Outcome{}, err
	}
	return applySecurity(ctx, env, d)
}

// applySecurity runs the security init tool on a node that answers HTTP and
// waits until it serves authenticated requests.
func applySecurity(ctx context.Context, env Env, d *Deps) (engine.Outcome, error) {
	// The tool waits for a yellow cluster: show the shards coming back meanwhile (the node
	// answers once it has recovered the security index).
	stop := watchRecovery(ctx, env, d, "recovery", "", true, nil)
	defer stop()
	// The node may not take the upload at once after a start: retry.
	res, err := secadmin.Apply(ctx, securityTool(d), d.Config.Indexer.SecurityInit, secadmin.ApplyOptions{
		Retry: func(ctx context.Context, what string, attempt func() (bool, error)) error {
			return wait(ctx, env, 2*d.poll(), what, attempt)
		},
		Failed: func(n int, err error) {
			env.Logger().Warn("security init failed, retrying", "attempt", n, "err", d.redact(err.Error()))
		}})
	if err != nil {
		return engine.Outcome{}, err
	}
	// The tool returns before the node has loaded what it uploaded: wait
	// until authenticated requests are served.
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	err = wait(ctx, env, d.poll(), "the indexer to serve authenticated requests", func() (bool, error) {
		_, err := ix.Health(ctx, indexer.HealthRequest{})
		if err != nil && cluster.NotAnswering(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: "security configuration applied (Done with success)", Data: map[string]any{"attempts": res.Attempts}}, nil
}
