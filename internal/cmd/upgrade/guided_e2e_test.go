//go:build e2e

package upgrade_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/siemctl/siemctl/lab/e2e"
)

// planBudget is the part of `upgrade plan -o json` the budget test reads.
type planBudget struct {
	Budget struct {
		HistoryRuns int     `json:"history_runs"`
		Total       float64 `json:"total_s"`
		Rollback    float64 `json:"rollback_s"`
		WindowMin   float64 `json:"window_min_s"`
		WindowMax   float64 `json:"window_max_s"`
		Data        struct {
			Mode  string `json:"mode"`
			Bytes int64  `json:"bytes"`
			Known bool   `json:"known"`
		} `json:"data"`
		Phases []struct {
			Phase    string  `json:"phase"`
			Estimate float64 `json:"estimate_s"`
			Source   string  `json:"source"`
		} `json:"phases"`
		Steps []struct {
			Step  string `json:"step"`
			Phase string `json:"phase"`
		} `json:"steps"`
	} `json:"budget"`
}

func planJSON(t *testing.T, l *e2e.Lab) planBudget {
	t.Helper()
	r := l.Siemctl("upgrade", "plan", "--to", "4.10.0", "-o", "json")
	if r.Code != 0 && r.Code != 3 { // 3 after the upgrade: already at the target
		mustCode(t, r, 0, "upgrade plan")
	}
	var p planBudget
	if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
		t.Fatalf("%v: %s", err, r.Stdout)
	}
	return p
}

// guidedApply runs apply --guided in a pseudo-terminal and answers c at
// every boundary; it returns the transcript, the exit code and the number of prompts.
func guidedApply(t *testing.T, l *e2e.Lab, args ...string) (string, int, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "siemctl"), args...)
	cmd.Env = append(append(os.Environ(), l.Env...), "SUDO_USER=e2e-operator")
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 8192)
		for {
			n, err := ptmx.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	answered := 0
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
loop:
	for {
		select {
		case werr = <-waited:
			break loop
		case <-time.After(100 * time.Millisecond):
			mu.Lock()
			n := strings.Count(buf.String(), "[c/w/r/s] ")
			mu.Unlock()
			if n > answered {
				if _, err := ptmx.Write([]byte("c\n")); err != nil {
					t.Fatal(err)
				}
				answered++
			}
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	mu.Lock()
	defer mu.Unlock()
	return strings.ReplaceAll(buf.String(), "\r\n", "\n"), code, answered
}

// TestE2EGuidedBudget: the plan's time budget on a fresh lab (no history:
// defaults, the start wait limits, the data volume), a guided upgrade in
// a pseudo-terminal answered "continue" at each boundary inside a 2h window,
// the decisions in upgrade status, and the estimated vs measured phase
// durations (then the estimate with this run as history).
func TestE2EGuidedBudget(t *testing.T) {
	binaries(t)
	l := e2e.Up(t, e2e.Options{PortOffset: portOffset})
	wantPackages(t, l.Dir, "4.9.0-1")

	if r := l.Siemctl("upgrade", "plan", "--to", "4.10.0"); r.Code == 0 {
		if i, j := strings.Index(r.Stdout, "Time budget"), strings.Index(r.Stdout, "\nSteps:"); i >= 0 && j > i {
			t.Logf("the plan's budget on a fresh lab:\n%s", r.Stdout[i:j])
		} else {
			t.Errorf("upgrade plan shows no time budget:\n%s", r.Stdout)
		}
	}
	before := planJSON(t, l)
	if before.Budget.HistoryRuns != 0 || !before.Budget.Data.Known || before.Budget.Total <= 0 || before.Budget.Rollback <= 0 {
		t.Fatalf("budget on a fresh lab: %+v", before.Budget)
	}
	if r := l.Siemctl("upgrade", "apply", "--to", "4.10.0", "--yes", "--window", "1m"); r.Code != 3 || !strings.Contains(r.Stderr, "does not hold the estimated upgrade") {
		t.Fatalf("a 1m window: exit %d\n%s", r.Code, r.Stderr)
	}
	wantPackages(t, l.Dir, "4.9.0-1")

	out, code, prompts := guidedApply(t, l, "upgrade", "apply", "--to", "4.10.0", "--yes", "--guided", "--window", "2h")
	if code != 0 {
		t.Fatalf("guided apply: exit %d\n%s", code, tail(out, 6000))
	}
	if prompts != 4 {
		t.Errorf("%d prompts, want 4 (after preflight, indexer, manager, validation)", prompts)
	}
	for _, want := range []string{"== preflight done", "== indexer done", "== manager done", "== validation done", "documents ", "point of no return", "Window: ends at", "Health now (siemctl health"} {
		if !strings.Contains(out, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	wantPackages(t, l.Dir, "4.10.0-1")
	t.Logf("guided transcript (boundaries):\n%s", lines(out, "== ", "Summary:", "Health now", "  CRIT", "  WARN", "  EXPECTED", "Time:", "Window:", "window:", "Snapshot diff:"))

	r := l.Siemctl("upgrade", "status", "-o", "json")
	var st struct {
		Status    string `json:"status"`
		Decisions []struct {
			Phase, Decision, Operator string
		} `json:"decisions"`
		Window *struct {
			Length string `json:"length"`
		} `json:"window"`
		Steps []struct {
			ID       string  `json:"id"`
			Duration float64 `json:"duration_s"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "succeeded" || len(st.Decisions) != 4 || st.Window == nil || st.Window.Length != "2h0m0s" {
		t.Fatalf("status: %s", r.Stdout)
	}
	for _, d := range st.Decisions {
		if d.Decision != "continue" || d.Operator != "e2e-operator" {
			t.Errorf("decision %+v", d)
		}
	}
	if r := l.Siemctl("upgrade", "status"); !strings.Contains(r.Stdout, "continue after indexer (indexer/recoveries-back) by e2e-operator") {
		t.Errorf("status table lacks the decisions:\n%s", r.Stdout)
	}

	// estimated vs measured per phase
	phaseOf := map[string]string{}
	for _, s := range before.Budget.Steps {
		phaseOf[s.Step] = s.Phase
	}
	measured := map[string]float64{}
	var total float64
	for _, s := range st.Steps {
		measured[phaseOf[s.ID]] += s.Duration
		total += s.Duration
	}
	after := planJSON(t, l) // this run is now history
	if after.Budget.HistoryRuns != 1 {
		t.Errorf("history runs after one upgrade: %d", after.Budget.HistoryRuns)
	}
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "%-11s %12s %10s %14s\n", "PHASE", "ESTIMATE", "MEASURED", "WITH HISTORY")
	for i, p := range before.Budget.Phases {
		hist := 0.0
		if i < len(after.Budget.Phases) && after.Budget.Phases[i].Phase == p.Phase {
			hist = after.Budget.Phases[i].Estimate
		}
		fmt.Fprintf(&tbl, "%-11s %11.1fs %9.1fs %13.1fs  (%s)\n", p.Phase, p.Estimate, measured[p.Phase], hist, p.Source)
	}
	fmt.Fprintf(&tbl, "%-11s %11.1fs %9.1fs %13.1fs\n", "total", before.Budget.Total, total, after.Budget.Total)
	fmt.Fprintf(&tbl, "rollback est. %.1fs (with history %.1fs); window %.0fs–%.0fs; data %d bytes, %s",
		before.Budget.Rollback, after.Budget.Rollback, before.Budget.WindowMin, before.Budget.WindowMax, before.Budget.Data.Bytes, before.Budget.Data.Mode)
	t.Logf("estimated vs measured phase durations on the lab:\n%s", tbl.String())
}
