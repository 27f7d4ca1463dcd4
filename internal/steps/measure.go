package steps

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
)

// meterEvery is how often a copy reports its bytes at most (the renderer
// limits what it shows further).
const meterEvery = 100 * time.Millisecond

// meter reports a copy's bytes through env.Report: at most every
// meterEvery, and always the first and the last (done reaching the total).
type meter struct {
	env  Env
	m    engine.Measure
	now  func() time.Time
	last time.Time
}

func newMeter(env Env, d *Deps, what string, total int64) *meter {
	return &meter{env: env, m: engine.Measure{What: what, Unit: engine.UnitBytes, Total: total}, now: d.now}
}

// set records done bytes.
func (m *meter) set(done int64) {
	m.m.Done = done
	t := m.now()
	if !m.last.IsZero() && t.Sub(m.last) < meterEvery && (m.m.Total <= 0 || done < m.m.Total) {
		return
	}
	m.last = t
	m.env.Report(m.m)
}

// snapshotMeasure is a snapshot's progress from _status: the incremental
// bytes processed, or the shards done when nothing new is to be copied.
func snapshotMeasure(what string, p indexer.SnapshotProgress) engine.Measure {
	m := engine.Measure{What: what, Unit: engine.UnitBytes, Done: p.ProcessedBytes, Total: p.IncrementalBytes,
		Detail: fmt.Sprintf("%d/%d shards", p.ShardsDone, p.ShardsTotal)}
	if p.IncrementalBytes <= 0 {
		m.Unit, m.Done, m.Total = engine.UnitShards, int64(p.ShardsDone), int64(p.ShardsTotal)
		m.Detail = "no new segments"
	}
	return m
}

// RecoveryAPI is the shard-recovery part of *indexer.Client (optional: a
// client without it shows no recovery progress).
type RecoveryAPI interface {
	Recoveries(ctx context.Context, pattern string, activeOnly bool) ([]indexer.ShardRecovery, error)
}

// recoveryMeasure sums the recoveries keep accepts: bytes recovered of
// the bytes to recover, and the shards done.
func recoveryMeasure(what string, rows []indexer.ShardRecovery, keep func(indexer.ShardRecovery) bool) engine.Measure {
	m := engine.Measure{What: what, Unit: engine.UnitBytes}
	done, n := 0, 0
	for _, r := range rows {
		if keep != nil && !keep(r) {
			continue
		}
		n++
		if r.Stage == "done" {
			done++
		}
		m.Done += r.BytesRecovered
		m.Total += r.BytesTotal
	}
	m.Detail = fmt.Sprintf("%d/%d shards recovered", done, n)
	if m.Total <= 0 {
		m.Unit, m.Done, m.Total = engine.UnitShards, int64(done), int64(n)
	}
	return m
}

// watchRecovery reports shard recovery every poll until the returned stop
// is called (stop waits for the watcher to end). The shards of pattern
// ("" every index) that keep accepts are counted; activeOnly asks for the
// shards still recovering only. Without a RecoveryAPI it does nothing.
func watchRecovery(ctx context.Context, env Env, d *Deps, what, pattern string, activeOnly bool, keep func(indexer.ShardRecovery) bool) (stop func()) {
	ix, err := d.indexer()
	if err != nil {
		return func() {}
	}
	ra, ok := ix.(RecoveryAPI)
	if !ok {
		return func() {}
	}
	look := func(ctx context.Context) {
		if rows, err := ra.Recoveries(ctx, pattern, activeOnly); err == nil {
			if m := recoveryMeasure(what, rows, keep); m.Total > 0 {
				env.Report(m)
			}
		}
	}
	look(ctx) // the first look at once: a short wait shows it too
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d.poll()):
			}
			look(ctx)
		}
	})
	return func() { cancel(); wg.Wait() }
}
