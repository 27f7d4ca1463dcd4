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
	opts := fixedOpts()
	opts.Rand = nil
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
	opts := fixedOpts()
	opts.Rand = nil
	a, err := Capture(context.Background(), src, opts)
	if err != nil {
		b.Fatal(err)
	}
	src.ix.Indices = src.ix.Indices[100:] // 100 lost indices
	after, err := Capture(context.Background(), src, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := Diff(a, after, DiffOptions{}); !r.Critical() {
			b.Fatal("lost indices not critical")
		}
	}
}

func BenchmarkSaveAndList(b *testing.B) {
	src := bigSource(5000, 100_000)
	opts := fixedOpts()
	opts.Rand = nil
	d, err := Capture(context.Background(), src, opts)
	if err != nil {
		b.Fatal(err)
	}
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
	opts := fixedOpts()
	opts.Rand = nil
	d, err := Capture(context.Background(), bigSource(5000, 100_000), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := RenderPrometheus(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}
