package health

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		in   []Status
		want Status
	}{
		{nil, OK},
		{[]Status{OK, OK}, OK},
		{[]Status{OK, Unknown}, Unknown},
		{[]Status{Unknown, Warn}, Warn},
		{[]Status{Warn, Crit, Unknown}, Crit},
	}
	for _, tt := range tests {
		var rs []Result
		for _, s := range tt.in {
			rs = append(rs, Result{Status: s})
		}
		if got := Verdict(rs); got != tt.want {
			t.Errorf("Verdict(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestRunDeadlineAndSharedProbe(t *testing.T) {
	var calls atomic.Int32
	shared := func(ctx context.Context, e *Env) (string, error) {
		return Shared(ctx, e, "probe", func(ctx context.Context) (string, error) {
			calls.Add(1)
			return "up", nil
		})
	}
	block := make(chan struct{})
	defer close(block)
	checks := []Check{
		{ID: "a", Component: "x", Run: func(ctx context.Context, e *Env) Result {
			v, _ := shared(ctx, e)
			return Result{Status: OK, Summary: v}
		}},
		{ID: "b", Component: "x", Run: func(ctx context.Context, e *Env) Result {
			v, _ := shared(ctx, e)
			return Result{Status: Warn, Summary: v}
		}},
		{ID: "hang", Component: "y", Run: func(ctx context.Context, e *Env) Result {
			<-block // ignores its context: the runner must not wait for it
			return Result{Status: OK}
		}},
		{ID: "panics", Component: "z", Run: func(ctx context.Context, e *Env) Result { panic("boom") }},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rep := Run(ctx, &Env{}, checks)
	if calls.Load() != 1 {
		t.Errorf("shared probe ran %d times, want 1", calls.Load())
	}
	want := map[string]Status{"a": OK, "b": Warn, "hang": Unknown, "panics": Unknown}
	for _, r := range rep.Results {
		if r.Status != want[r.ID] {
			t.Errorf("%s: status %v, want %v", r.ID, r.Status, want[r.ID])
		}
	}
	if rep.Results[2].Summary != "no answer before the deadline" {
		t.Errorf("hang summary = %q", rep.Results[2].Summary)
	}
	if !strings.Contains(rep.Results[3].Summary, "boom") {
		t.Errorf("panic not reported: %q", rep.Results[3].Summary)
	}
	if rep.Verdict != Warn {
		t.Errorf("verdict %v, want WARN", rep.Verdict)
	}
}

func TestSelect(t *testing.T) {
	cat := []Check{{ID: "units"}, {ID: "ports"}, {ID: "alerts.probe", Deep: true}}
	ids := func(cs []Check) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.ID)
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		sel     Selection
		want    string
		wantErr string
	}{
		{Selection{}, "units,ports", ""},
		{Selection{Deep: true}, "units,ports,alerts.probe", ""},
		{Selection{Only: []string{"alerts.probe"}}, "alerts.probe", ""},
		{Selection{Skip: []string{"units"}}, "ports", ""},
		{Selection{Only: []string{"unit"}}, "", "unknown check id unit"},
	}
	for _, tt := range tests {
		got, err := Select(cat, tt.sel)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%+v: err %v, want %q", tt.sel, err, tt.wantErr)
			}
			continue
		}
		if err != nil || ids(got) != tt.want {
			t.Errorf("%+v: got %q %v, want %q", tt.sel, ids(got), err, tt.want)
		}
	}
}
