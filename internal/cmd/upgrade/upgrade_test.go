package upgrade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/upgrade"
)

func TestNewCmdApply(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(*testing.T, *ApplyOptions)
	}{
		{"all flags", []string{"--to", "4.10.0", "--dry-run", "--runbook", "rb.yaml", "--only", "indexer", "--skip-steps", "post/diff,post/snapshot", "--ignore-gate", "preflight/agents", "--retry-lock", "2m"}, "",
			func(t *testing.T, o *ApplyOptions) {
				if o.To != "4.10.0" || !o.DryRun || o.Runbook != "rb.yaml" || !slices.Equal(o.Only, []string{"indexer"}) ||
					!slices.Equal(o.SkipSteps, []string{"post/diff", "post/snapshot"}) || !slices.Equal(o.IgnoreGates, []string{"preflight/agents"}) || o.RetryLock != 2*time.Minute {
					t.Fatalf("%+v", o)
				}
			}},
		{"no target", []string{"--yes"}, "--to is required", nil},
		{"not a version", []string{"--to", "banana"}, `--to: invalid target version "banana": give the upstream version (e.g. 4.10.0) or the exact package version (e.g. 4.10.0-1)`, nil},
		{"no patch level", []string{"--to", "4.10"}, "invalid target version", nil},
		{"negative retry", []string{"--to", "4.10.0", "--retry-lock", "-1s"}, `invalid duration "-1s"`, nil},
		{"retry in days", []string{"--to", "4.10.0", "--retry-lock", "1d"}, "", func(t *testing.T, o *ApplyOptions) {
			if o.RetryLock != 24*time.Hour {
				t.Fatalf("retry-lock %v", o.RetryLock)
			}
		}},
		{"bad output", []string{"--to", "4.10.0", "-o", "yaml"}, "-o yaml is not supported", nil},
		{"watch 20m", []string{"--to", "4.10.0", "--watch", "20m"}, "", func(t *testing.T, o *ApplyOptions) {
			if o.Watch != 20*time.Minute {
				t.Fatalf("watch %v", o.Watch)
			}
		}},
		{"watch 1d", []string{"--to", "4.10.0", "--watch", "1d"}, "", func(t *testing.T, o *ApplyOptions) {
			if o.Watch != 24*time.Hour {
				t.Fatalf("watch %v", o.Watch)
			}
		}},
		{"watch too long", []string{"--to", "4.10.0", "--watch", "25h"}, "--watch 25h0m0s: want a window up to 24h0m0s", nil},
		{"watch not a duration", []string{"--to", "4.10.0", "--watch", "soon"}, `invalid duration "soon"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clitest.Parse(NewCmdApply, tt.args...)
			if tt.wantErr != "" {
				var fe *cli.FlagError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &fe) {
					t.Fatalf("err %v, want FlagError %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

// fakeApt answers dpkg-query, apt-cache policy and apt-get over a map.
type fakeApt struct {
	mu        sync.Mutex
	installed map[string]string
	calls     []string
}

func (f *fakeApt) Run(_ context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	var out strings.Builder
	switch name {
	case "dpkg-query":
		for _, a := range args {
			if v := f.installed[a]; v != "" {
				fmt.Fprintf(&out, "%s\tinstall ok installed\t%s\n", a, v)
			}
		}
	case "apt-cache":
		pkg := args[len(args)-1]
		fmt.Fprintf(&out, "%s:\n  Installed: %s\n  Candidate: 4.10.0-1\n  Version table:\n     4.10.0-1 500\n        500 file:/repo ./ Packages\n     4.9.0-1 500\n        500 file:/repo ./ Packages\n", pkg, f.installed[pkg])
	case "apt-get":
		for _, a := range args {
			if p, v, ok := strings.Cut(a, "="); ok && !strings.HasPrefix(a, "-") && !strings.Contains(p, ":") {
				f.installed[p] = v
			}
		}
	}
	return []byte(out.String()), nil, 0, nil
}

// partialRunbook installs only the indexer: its validation says no-go after
// a change, which rolls back.
const partialRunbook = `name: upgrade
steps:
  - id: preflight/versions
    kind: gate.versions
    with: {check: candidates, version: target}
  - id: indexer/allocation-primaries
    kind: indexer.allocation
    with: {value: primaries}
    undo: {kind: indexer.allocation, with: {value: all}}
  - id: indexer/install
    kind: packages.install
    with: {component: indexer}
    undo: {kind: packages.downgrade, with: {component: indexer}}
    on_fail: rollback
  - id: validate/versions
    kind: gate.versions
    with: {check: installed, version: target}
    on_fail: rollback
  - id: finally/allocation-all
    kind: indexer.allocation
    with: {value: all}
    always: true
`

var testRunbook = strings.Replace(partialRunbook, "  - id: validate/versions", `  - id: manager/install
    kind: packages.install
    with: {component: manager}
    undo: {kind: packages.downgrade, with: {component: manager}}
    on_fail: rollback
  - id: dashboard/install
    kind: packages.install
    with: {component: dashboard}
    on_fail: rollback
  - id: shipper/install
    kind: packages.install
    with: {component: shipper}
    on_fail: rollback
  - id: validate/versions`, 1)

type fixture struct {
	common  runs.Common
	apt     *fakeApt
	srv     *indexertest.Server
	runbook string
	state   string
	out     *bytes.Buffer
	errOut  *bytes.Buffer
}

func newFixture(t *testing.T, installed string) *fixture {
	t.Helper()
	d := t.TempDir()
	cfg := clitest.LoadConfig(t, d, "state_dir: "+d+"/state\nbackup_dir: "+d+"/backups\n")
	apt := &fakeApt{installed: map[string]string{"siem-indexer": installed, "siem-manager": installed, "siem-dashboard": installed, "shipper": installed}}
	pm, err := packages.New("apt", apt)
	if err != nil {
		t.Fatal(err)
	}
	// The fake node keeps the allocation setting it was given.
	var mu sync.Mutex
	alloc := "all"
	routes := indexertest.Healthy()
	srv := indexertest.NewServer(t, routes)
	srv.Set("PUT /_cluster/settings", indexertest.Route{Handler: func(w http.ResponseWriter, _ *http.Request) {
		var body struct {
			Persistent map[string]any `json:"persistent"`
		}
		last, _ := srv.Last("PUT /_cluster/settings") // the fake read the body already
		_ = json.Unmarshal(last.Body, &body)
		mu.Lock()
		if v, ok := body.Persistent[indexer.KeyAllocationEnable].(string); ok {
			alloc = v
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"acknowledged":true,"persistent":{},"transient":{}}`))
	}})
	srv.Set("GET /_cluster/settings", indexertest.Route{Handler: func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"persistent":{%q:%q},"transient":{}}`, indexer.KeyAllocationEnable, alloc)
	}})
	deps := &steps.Deps{Config: cfg, Packages: clientset.Of[steps.PackagesAPI](pm), Indexer: clientset.Of[steps.IndexerAPI](srv.Client(t)), Poll: time.Millisecond, Now: time.Now}
	rb := filepath.Join(d, "runbook.yaml")
	clitest.WriteFile(t, rb, testRunbook, 0o600)
	ios, _, out, errOut := output.Test()
	return &fixture{
		common: runs.Common{IO: ios, Deps: func(context.Context) (*steps.Deps, error) { return deps, nil }, Now: time.Now, Poll: time.Millisecond},
		apt:    apt, srv: srv, runbook: rb, state: cfg.StateDir, out: out, errOut: errOut,
	}
}

func TestRunApply(t *testing.T) {
	t.Run("non-TTY without --yes", func(t *testing.T) {
		fx := newFixture(t, "4.9.0-1")
		err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook})
		if !errors.Is(err, output.ErrNoTTY) || cli.ExitCode(err) != 2 {
			t.Fatalf("%v (exit %d)", err, cli.ExitCode(err))
		}
		if fx.apt.installed["siem-indexer"] != "4.9.0-1" {
			t.Fatal("installed without confirmation")
		}
	})
	t.Run("TTY declined", func(t *testing.T) {
		fx := newFixture(t, "4.9.0-1")
		fx.common.IO.SetTTY(true, true, true)
		fx.common.IO.In = strings.NewReader("n\n")
		if err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook}); !errors.Is(err, output.ErrDeclined) {
			t.Fatal(err)
		}
		if !strings.Contains(fx.errOut.String(), "Upgrade to 4.10.0 (siem-indexer 4.9.0-1 → 4.10.0-1") {
			t.Fatalf("question: %s", fx.errOut)
		}
	})
	t.Run("success, JSON report", func(t *testing.T) {
		fx := newFixture(t, "4.9.0-1")
		fx.common.Yes, fx.common.Output = true, "json"
		if err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook}); err != nil {
			t.Fatalf("%v\n%s", err, fx.errOut)
		}
		var rep upgrade.RunReport
		if err := json.Unmarshal(fx.out.Bytes(), &rep); err != nil {
			t.Fatalf("%v: %s", err, fx.out)
		}
		if rep.Status != engine.StatusSucceeded || rep.Previous["indexer"] != "4.9.0-1" || rep.Targets["indexer"] != "4.10.0-1" || len(rep.Steps) != 8 {
			t.Fatalf("%+v", rep)
		}
		if fx.apt.installed["siem-indexer"] != "4.10.0-1" {
			t.Fatal("not installed")
		}
		// JSON progress on stderr, one object per line.
		for _, l := range strings.Split(strings.TrimSpace(fx.errOut.String()), "\n") {
			if strings.HasPrefix(l, "{") && !json.Valid([]byte(l)) {
				t.Fatalf("progress line %q", l)
			}
		}
	})
	t.Run("table progress and report", func(t *testing.T) {
		fx := newFixture(t, "4.9.0-1")
		fx.common.Yes = true
		if err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"[2/8] indexer/allocation-primaries …", "[2/8] indexer/allocation-primaries ok", "[3/8] indexer/install ok", "succeeded"} {
			if !strings.Contains(fx.errOut.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, fx.errOut)
			}
		}
		for _, want := range []string{"status:", "succeeded", "versions:", "indexer 4.9.0-1 → 4.10.0-1", "indexer/install\tpackages.install\tok"} {
			if !strings.Contains(fx.out.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, fx.out)
			}
		}
	})
	t.Run("no-go before any change is exit 3", func(t *testing.T) {
		fx := newFixture(t, "4.10.0-1") // already at the target
		fx.common.Yes = true
		err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook})
		var ge *engine.GateError
		if !errors.As(err, &ge) || cli.ExitCode(err) != 3 {
			t.Fatalf("%v (exit %d)", err, cli.ExitCode(err))
		}
		if n := len(fx.srv.Requests()); n != 0 {
			t.Fatalf("%d indexer requests after a no-go", n)
		}
	})
	t.Run("no-go after a change rolls back: exit 10", func(t *testing.T) {
		fx := newFixture(t, "4.9.0-1")
		fx.common.Yes = true
		rb := filepath.Join(t.TempDir(), "partial.yaml")
		clitest.WriteFile(t, rb, partialRunbook, 0o600)
		err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: rb})
		var rbe *engine.RolledBackError
		if !errors.As(err, &rbe) || cli.ExitCode(err) != 10 {
			t.Fatalf("%v (exit %d)", err, cli.ExitCode(err))
		}
		if fx.apt.installed["siem-indexer"] != "4.9.0-1" {
			t.Fatalf("indexer %s after the rollback", fx.apt.installed["siem-indexer"])
		}
		if !strings.Contains(fx.errOut.String(), "undo indexer/install ok") || !strings.Contains(fx.errOut.String(), "rolled-back") {
			t.Fatalf("progress:\n%s", fx.errOut)
		}
	})
	t.Run("dry run prints the commands and changes nothing", func(t *testing.T) {
		fx := newFixture(t, "4.9.0-1")
		if err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, DryRun: true}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold siem-indexer=4.10.0-1", `PUT /_cluster/settings {"persistent":{"cluster.routing.allocation.enable":"primaries"}}`} {
			if !strings.Contains(fx.out.String(), want) {
				t.Errorf("dry run lacks %q:\n%s", want, fx.out)
			}
		}
		if fx.apt.installed["siem-indexer"] != "4.9.0-1" || len(fx.srv.Requests()) != 0 {
			t.Fatal("dry run changed something")
		}
		if _, err := os.Stat(filepath.Join(fx.state, "runs")); !os.IsNotExist(err) {
			t.Fatal("dry run wrote a journal")
		}
	})
	t.Run("ignore-gate refuses a gate that is not ignorable", func(t *testing.T) {
		fx := newFixture(t, "4.9.0-1")
		fx.common.Yes = true
		err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, IgnoreGates: []string{"preflight/versions"}})
		var fe *cli.FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "cannot be ignored") {
			t.Fatal(err)
		}
	})
}

func TestStatusAndResume(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	// Interrupt the run after the first change (cancel at step-ok of allocation).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := prepare(ctx, fx.common, "4.10.0", fx.runbook, engine.Selection{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := runs.NewRunner(fx.common, p, 0, "test", false)
	r.Observer = engine.ObserverFunc(func(pr engine.Progress) {
		if pr.Type == engine.EvStepOK && pr.Step == "indexer/allocation-primaries" {
			cancel()
		}
	})
	_, err = r.Run(ctx, p.Plan, engine.RunOptions{Seed: p.Seed})
	if cli.ExitCode(err) != 130 {
		t.Fatalf("interrupted run: %v (exit %d)", err, cli.ExitCode(err))
	}
	fx.common.Output = "json"
	if err := runStatus(context.Background(), &StatusOptions{Common: fx.common}); err != nil {
		t.Fatal(err)
	}
	var rep upgrade.RunReport
	if err := json.Unmarshal(fx.out.Bytes(), &rep); err != nil || rep.Status != engine.StatusInterrupted {
		t.Fatalf("status %+v %v", rep, err)
	}
	fx.out.Reset()
	if err := runResume(context.Background(), &ResumeOptions{Common: fx.common}); err != nil {
		t.Fatalf("resume: %v\n%s", err, fx.errOut)
	}
	if err := json.Unmarshal(fx.out.Bytes(), &rep); err != nil || rep.Status != engine.StatusSucceeded {
		t.Fatalf("after resume %+v %v", rep, err)
	}
	if fx.apt.installed["siem-indexer"] != "4.10.0-1" {
		t.Fatal("resume did not install")
	}
	// Only one PUT primaries: the completed step was not repeated.
	n := 0
	for _, rq := range fx.srv.Requests() {
		if rq.Method == "PUT" && strings.Contains(string(rq.Body), `"primaries"`) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("allocation set to primaries %d times", n)
	}
	if err := runResume(context.Background(), &ResumeOptions{Common: fx.common}); !errors.Is(err, engine.ErrNotResumable) {
		t.Fatalf("resuming a finished run: %v", err)
	}
}

// TestPlanBadTarget: `upgrade plan --to banana` is a usage error (exit 2)
// naming the valid forms, before anything is read.
func TestPlanBadTarget(t *testing.T) {
	for _, to := range []string{"banana", "4.10", "v4.10.0", "4.10.0-"} {
		ios, _, out, errOut := output.Test()
		reg := func(root *cobra.Command, f *cli.Factory) {
			f.Config = func() (*config.Config, error) { t.Fatal("config read for a bad --to"); return nil, nil }
			root.AddCommand(NewCmdUpgrade(f))
		}
		code := cli.Main(context.Background(), []string{"upgrade", "plan", "--to", to}, cli.Stdio{IO: ios}, reg)
		if code != cli.ExitUsage || out.Len() != 0 || !strings.Contains(errOut.String(), "give the upstream version (e.g. 4.10.0) or the exact package version (e.g. 4.10.0-1)") {
			t.Errorf("--to %s: exit %d\n%s", to, code, errOut)
		}
	}
}

// shows fails t for each of wants that out (what: "plan", "output") lacks.
func shows(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, out)
		}
	}
}
