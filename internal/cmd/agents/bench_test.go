package agents_test

import (
	"context"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	agentscmd "github.com/siemctl/siemctl/internal/cmd/agents"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/output"
)

type countWriter struct{ n atomic.Int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

// peakHeap samples the live heap every millisecond until stop is closed.
func peakHeap(stop <-chan struct{}, peak *uint64) {
	var ms runtime.MemStats
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > *peak {
			*peak = ms.HeapAlloc
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// BenchmarkListJSON100k streams `agents list -o json` from a fake manager
// with 100,000 agents (plus 000). Reported: API requests per listing, peak
// live heap of the whole process (client and fake server), bytes written.
func BenchmarkListJSON100k(b *testing.B) {
	for _, size := range []int{500, fleet.DefaultPageSize, 100000} {
		b.Run("page="+itoa(size), func(b *testing.B) {
			srv := managertest.New(b, managertest.Config{Agents: managertest.GenerateAgents(100000)})
			c, err := manager.New(manager.Options{URL: srv.URL, Username: srv.Username(), Password: srv.Password()})
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			var peak uint64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { peakHeap(stop, &peak); close(done) }()
			before := srv.Requests.Load()
			w := &countWriter{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				io := &output.IOStreams{Out: w, ErrOut: io.Discard}
				opts := &agentscmd.ListOptions{IO: io, Output: "json", Timeout: time.Minute, PageSize: size,
					Fleet: agentscmd.Fleet{
						API:   func(context.Context) (fleet.API, error) { return c, nil },
						Tools: func(context.Context) (fleet.Tools, error) { return nil, nil },
					}}
				if err := agentscmd.RunList(context.Background(), opts); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			close(stop)
			<-done
			b.ReportMetric(float64(srv.Requests.Load()-before)/float64(b.N), "requests/op")
			b.ReportMetric(float64(peak-min(peak, base.HeapAlloc))/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(w.n.Load())/float64(b.N)/(1<<20), "out-MiB/op")
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
