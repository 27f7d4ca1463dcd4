package health

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
)

// latency is a known delay added to every call, like a remote endpoint
// would add; calls counts the round trips.
type latency struct {
	d     time.Duration
	calls *atomic.Int64
}

func (l latency) wait() { l.calls.Add(1); time.Sleep(l.d) }

// slowIndexer and slowManager are the fakes behind a latency.
type slowIndexer struct {
	*fakeIndexer
	latency
}

func (s slowIndexer) Info(ctx context.Context) (indexer.Info, error) {
	s.wait()
	return s.fakeIndexer.Info(ctx)
}
func (s slowIndexer) Health(ctx context.Context, hr indexer.HealthRequest) (indexer.Health, error) {
	s.wait()
	return s.fakeIndexer.Health(ctx, hr)
}
func (s slowIndexer) Settings(ctx context.Context, d bool) (indexer.Settings, error) {
	s.wait()
	return s.fakeIndexer.Settings(ctx, d)
}
func (s slowIndexer) CatAllocation(ctx context.Context) ([]indexer.Allocation, error) {
	s.wait()
	return s.fakeIndexer.CatAllocation(ctx)
}
func (s slowIndexer) LegacyTemplate(ctx context.Context, n string) (indexer.Template, error) {
	s.wait()
	return s.fakeIndexer.LegacyTemplate(ctx, n)
}
func (s slowIndexer) Count(ctx context.Context, i, q string, since time.Time) (int64, error) {
	s.wait()
	return s.fakeIndexer.Count(ctx, i, q, since)
}

type slowManager struct {
	*fakeManager
	latency
}

func (s slowManager) Info(ctx context.Context) (manager.APIInfo, error) {
	s.wait()
	return s.fakeManager.Info(ctx)
}
func (s slowManager) AgentsSummary(ctx context.Context) (manager.AgentsSummary, error) {
	s.wait()
	return s.fakeManager.AgentsSummary(ctx)
}
func (s slowManager) ValidateConfig(ctx context.Context) (manager.ConfigValidation, error) {
	s.wait()
	return s.fakeManager.ValidateConfig(ctx)
}

// BenchmarkHealthConcurrency runs the whole catalogue against endpoints with
// known latencies (indexer 40ms, manager 60ms, dashboard 80ms — the slowest
// single probe) and reports siemctl's wall time as a ratio of the slowest
// probe (goal: close to 1; the dependent indexer calls add a hop) and of the
// same probes run one after another, as the manual runbook does.
//
//	go test ./internal/health -run '^$' -bench HealthConcurrency
func BenchmarkHealthConcurrency(b *testing.B) {
	const ixLat, mgrLat, dashLat = 40 * time.Millisecond, 60 * time.Millisecond, 80 * time.Millisecond
	var calls atomic.Int64
	t := &testing.T{}
	var wall time.Duration
	for i := 0; i < b.N; i++ {
		w := healthyWorld()
		e := w.env(t)
		e.Stack.Indexer = clientset.Of[IndexerAPI](slowIndexer{w.ix, latency{ixLat, &calls}})
		e.Stack.Manager = clientset.Of[ManagerAPI](slowManager{w.mgr, latency{mgrLat, &calls}})
		e.Stack.Dashboard = func(ctx context.Context) (DashboardAnswer, error) {
			calls.Add(1)
			time.Sleep(dashLat)
			return w.dash, nil
		}
		calls.Store(0)
		checks, _ := Select(Catalogue(), Selection{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		rep := Run(ctx, e, checks)
		wall += time.Since(start)
		cancel()
		if rep.Verdict != OK {
			b.Fatalf("verdict %s", rep.Verdict)
		}
	}
	perRun := wall / time.Duration(b.N)
	// The manual runbook: every round trip one after another. Indexer and
	// manager calls are counted per run; the dashboard is fetched once.
	n := calls.Load()               // of the last run
	seq := time.Duration(n) * ixLat // lower bound: every call at the fastest latency
	b.ReportMetric(float64(perRun)/float64(dashLat), "x_slowest_probe")
	b.ReportMetric(float64(perRun)/float64(seq), "x_sequential")
	b.ReportMetric(float64(n), "round_trips")
}
