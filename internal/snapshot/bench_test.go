package snapshot

import (
	"context"
	"github.com/siemctl/siemctl/internal/redact"
	"io"
	"testing"
)

// BenchmarkCapture: an emulated stack of 5,000 indices (10,000 shards) and
// 100,000 agents, aggregated.
func BenchmarkCapture(b *testing.B) {
	src := bigSource(5000, 100_000)
	opts := benchOpts()
	opts.Redactor = redact.New("bench-secret-1", "bench-secret-2")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Capture(context.Background(), src, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiff(b *testing.B) {
	src := bigSource(5000, 100_000)
	a := benchCapture(b, src)
	src.ix.Indices = src.ix.Indices[100:] // 100 lost indices
	after := benchCapture(b, src)
	b.ReportAllocs()
	for b.Loop() {
		if r := Diff(a, after, DiffOptions{}); !r.Critical() {
			b.Fatal("lost indices not critical")
		}
	}
}

func BenchmarkSaveAndList(b *testing.B) {
	d := benchCapture(b, bigSource(5000, 100_000))
	s := &Store{Dir: b.TempDir()}
	b.ReportAllocs()
	for b.Loop() {
		d.ID, _ = NewID(fixedNow, nil)
		if _, err := s.Save(d); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	list, err := s.List()
	if err != nil || len(list) == 0 {
		b.Fatal(err)
	}
}

func BenchmarkRenderPrometheus(b *testing.B) {
	d := benchCapture(b, bigSource(5000, 100_000))
	b.ReportAllocs()
	for b.Loop() {
		if err := RenderPrometheus(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}

// benchOpts are fixedOpts with random IDs (a benchmark captures many times).
func benchOpts() CaptureOptions {
	opts := fixedOpts()
	opts.Rand = nil
	return opts
}

// benchCapture captures src for a benchmark's setup.
func benchCapture(b *testing.B, src *fakeSource) *Document {
	b.Helper()
	d, err := Capture(context.Background(), src, benchOpts())
	if err != nil {
		b.Fatal(err)
	}
	return d
}
