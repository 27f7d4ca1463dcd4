package services

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/units"
	"github.com/siemctl/siemctl/internal/units/unitstest"
)

var unitMap = map[string]string{"indexer": "siem-indexer.service", "manager": "siem-manager", "dashboard": "siem-dashboard.service", "shipper": "shipper.service"}

func TestSelect(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		all     bool
		wantErr string
	}{
		{nil, "indexer manager dashboard shipper", true, ""},
		{[]string{"all"}, "indexer manager dashboard shipper", true, ""},
		{[]string{"shipper", "indexer", "shipper"}, "indexer shipper", false, ""},
		{[]string{"Manager"}, "manager", false, ""},
		{[]string{"indexer", "kibana"}, "", false, `unknown component "kibana"`},
	}
	for _, tt := range tests {
		comps, all, err := Select(unitMap, tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrUnknownComponent) {
				t.Errorf("%v: err %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		var names []string
		for _, c := range comps {
			names = append(names, c.Name)
		}
		if strings.Join(names, " ") != tt.want || all != tt.all || err != nil {
			t.Errorf("%v: got %v all=%v err=%v", tt.args, names, all, err)
		}
	}
	comps, _, _ := Select(unitMap, []string{"manager"})
	if comps[0].Unit != "siem-manager.service" || comps[0].Wait != 30*time.Second {
		t.Errorf("manager component %+v", comps[0])
	}
}

func noSleep(context.Context, time.Duration) error { return nil }

func TestOrderAndWaits(t *testing.T) {
	all, _, _ := Select(unitMap, nil)
	tests := []struct {
		name  string
		run   func(r *Runner) ([]Outcome, error)
		calls []string
	}{
		{"start", func(r *Runner) ([]Outcome, error) { return r.Start(context.Background(), all) },
			[]string{"reset-failed siem-indexer.service", "start siem-indexer.service", "reset-failed siem-manager.service", "start siem-manager.service",
				"reset-failed siem-dashboard.service", "start siem-dashboard.service", "reset-failed shipper.service", "start shipper.service"}},
		{"stop", func(r *Runner) ([]Outcome, error) { return r.Stop(context.Background(), all) },
			[]string{"stop shipper.service", "procs shipper.service", "reset-failed shipper.service", "stop siem-dashboard.service", "procs siem-dashboard.service", "reset-failed siem-dashboard.service",
				"stop siem-manager.service", "procs siem-manager.service", "reset-failed siem-manager.service", "stop siem-indexer.service", "procs siem-indexer.service", "reset-failed siem-indexer.service"}},
		{"restart", func(r *Runner) ([]Outcome, error) { return r.Restart(context.Background(), all) },
			[]string{"reset-failed siem-indexer.service", "restart siem-indexer.service", "reset-failed siem-manager.service", "restart siem-manager.service",
				"reset-failed siem-dashboard.service", "restart siem-dashboard.service", "reset-failed shipper.service", "restart shipper.service"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := unitstest.NewFake()
			r := &Runner{Units: f, Sleep: noSleep}
			outs, err := tt.run(r)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(f.Calls, "|") != strings.Join(tt.calls, "|") {
				t.Errorf("calls\n got %v\nwant %v", f.Calls, tt.calls)
			}
			for _, o := range outs {
				if o.Result != ResultDone {
					t.Errorf("%s: %s", o.Component, o.Result)
				}
			}
			if tt.name != "stop" {
				want := map[string]time.Duration{"siem-indexer.service": 60 * time.Second, "siem-manager.service": 30 * time.Second,
					"siem-dashboard.service": 60 * time.Second, "shipper.service": 30 * time.Second}
				for u, d := range want {
					if got := f.Timeouts[tt.name+" "+u]; got != d {
						t.Errorf("%s %s waited %s, want %s", tt.name, u, got, d)
					}
				}
			}
		})
	}
}

func TestStartFailureExplainedAndRestSkipped(t *testing.T) {
	f := unitstest.NewFake()
	f.FailOn["start siem-manager.service"] = "exit-code"
	all, _, _ := Select(unitMap, nil)
	var progress []string
	r := &Runner{Units: f, Sleep: noSleep,
		LogLines: func(_ context.Context, st units.UnitStatus, n int) ([]string, error) {
			if st.Name != "siem-manager.service" || n != DefaultLogLines {
				t.Errorf("log lines for %s n=%d", st.Name, n)
			}
			return []string{"siem-analysisd: CRITICAL: (1202): Configuration error at 'etc/ossec.conf'."}, nil
		},
		Progress: func(o Outcome, done bool) { progress = append(progress, o.Component+":"+o.Result) },
	}
	outs, err := r.Start(context.Background(), all)
	var ae *ActionError
	if !errors.As(err, &ae) || ae.Component != "manager" || !errors.Is(err, units.ErrUnitFailed) {
		t.Fatalf("err %v", err)
	}
	got := []string{}
	for _, o := range outs {
		got = append(got, o.Component+"="+o.Result)
	}
	if strings.Join(got, " ") != "indexer=done manager=failed dashboard=skipped shipper=skipped" {
		t.Errorf("outcomes %v", got)
	}
	m := outs[1]
	if m.Failure != "exit-code (exit status 1)" || len(m.LogLines) != 1 || !strings.Contains(m.LogLines[0], "1202") {
		t.Errorf("manager outcome not explained: %+v", m)
	}
	if strings.Join(f.Calls, "|") != "reset-failed siem-indexer.service|start siem-indexer.service|reset-failed siem-manager.service|start siem-manager.service" {
		t.Errorf("calls after failure: %v", f.Calls)
	}
	if strings.Join(progress, " ") != "indexer: indexer:done manager: manager:failed" {
		t.Errorf("progress %v", progress)
	}
}

func TestStopVerifiesProcessesGone(t *testing.T) {
	comps, _, _ := Select(unitMap, []string{"manager"})
	tests := []struct {
		name    string
		procs   [][]int
		wantErr bool
		sleeps  int
	}{
		{"gone at once", nil, false, 0},
		{"gone after two polls", [][]int{{101, 102}, {102}, {}}, false, 2},
		{"left behind", [][]int{{101, 102}}, true, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := unitstest.NewFake()
			f.Procs["siem-manager.service"] = tt.procs
			sleeps := 0
			r := &Runner{Units: f, ProcessWait: 5 * time.Millisecond, ProcessPoll: time.Millisecond,
				Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }}
			outs, err := r.Stop(context.Background(), comps)
			if (err != nil) != tt.wantErr || sleeps != tt.sleeps {
				t.Fatalf("err %v sleeps %d", err, sleeps)
			}
			if tt.wantErr {
				if !errors.Is(err, ErrProcessesLeft) || !strings.Contains(err.Error(), "pids 101 102") || len(outs[0].Leftover) != 2 {
					t.Errorf("err %v outcome %+v", err, outs[0])
				}
			}
		})
	}
}

func TestStatusAndEnable(t *testing.T) {
	f := unitstest.NewFake()
	f.State["siem-indexer.service"] = units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "active", SubState: "running"}
	comps, _, _ := Select(unitMap, []string{"shipper", "indexer"})
	r := &Runner{Units: f}
	sts, err := r.Status(context.Background(), comps)
	if err != nil || len(sts) != 2 || sts[0].Component != "indexer" || !sts[0].Active || sts[1].Active {
		t.Fatalf("%+v %v", sts, err)
	}
	ch, err := r.Enable(context.Background(), comps)
	if err != nil || ch == nil || f.Calls[0] != "enable siem-indexer.service shipper.service" {
		t.Errorf("enable: %v %v %v", ch, err, f.Calls)
	}
}

// The runbook's steps skip what is already done (SkipDone) and take a
// per-call wait limit (Component.Wait); a stop left "failed" by its stop
// signal is reset; a start of a failed unit resets it first.
func TestSkipDoneResetFailedAndPerCallWait(t *testing.T) {
	f := unitstest.NewFake()
	f.State["siem-indexer.service"] = units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "active", SubState: "running", MainPID: 7}
	f.State["siem-manager.service"] = units.UnitStatus{Name: "siem-manager.service", LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "signal"}
	comps, _, _ := Select(unitMap, []string{"indexer", "manager"})
	comps[1].Wait = 5 * time.Second
	r := &Runner{Units: f, Sleep: noSleep, SkipDone: true}
	outs, err := r.Start(context.Background(), comps)
	if err != nil {
		t.Fatal(err)
	}
	if !outs[0].Already || outs[0].MainPID != 7 || outs[1].Already {
		t.Errorf("outcomes %+v", outs)
	}
	if got := strings.Join(f.Calls, "|"); got != "reset-failed siem-manager.service|start siem-manager.service" {
		t.Errorf("start calls %s", got)
	}
	if f.Timeouts["start siem-manager.service"] != 5*time.Second {
		t.Errorf("per-call wait not used: %s", f.Timeouts["start siem-manager.service"])
	}

	// Stop: the manager's stop leaves it failed (killed by its signal) and
	// one daemon takes a look to go; the second stop finds it down.
	f.Calls = nil
	f.Procs["siem-manager.service"] = [][]int{{4242}, {}}
	var waits []string
	r.Waiting = func(format string, args ...any) { waits = append(waits, fmt.Sprintf(format, args...)) }
	f.State["siem-manager.service"] = units.UnitStatus{Name: "siem-manager.service", LoadState: "loaded", ActiveState: "active", SubState: "running"}
	f.FailOn["stop siem-manager.service"] = "signal"
	outs, err = r.Stop(context.Background(), comps[1:])
	if err != nil || outs[0].Already || outs[0].State != "inactive/dead" {
		t.Fatalf("stop: %+v %v", outs, err)
	}
	if strings.Join(waits, "|") != "processes of siem-manager.service to exit" {
		t.Errorf("waits %v", waits)
	}
	if !strings.HasSuffix(strings.Join(f.Calls, "|"), "reset-failed siem-manager.service") {
		t.Errorf("stop did not reset-failed: %v", f.Calls)
	}
	outs, err = r.Stop(context.Background(), comps[1:])
	if err != nil || !outs[0].Already {
		t.Fatalf("second stop: %+v %v", outs, err)
	}

	// Without SkipDone (the services command) an active unit gets its job.
	f.Calls = nil
	r.SkipDone = false
	if _, err := r.Start(context.Background(), comps[:1]); err != nil || !strings.Contains(strings.Join(f.Calls, "|"), "start siem-indexer.service") {
		t.Errorf("start without SkipDone: %v %v", f.Calls, err)
	}
}

// One table for the "units inactive" verdict: the health check "units"
// maps it to CRIT + Fix, the gates to pending + Describe.
func TestUnitsVerdict(t *testing.T) {
	st := func(name, load, active, sub string) units.UnitStatus {
		return units.UnitStatus{Name: name, LoadState: load, ActiveState: active, SubState: sub}
	}
	tests := []struct {
		name     string
		st       units.UnitStatus
		inactive bool
		fix      string
		describe string
	}{
		{"active", st("siem-indexer.service", "loaded", "active", "running"), false, "", "siem-indexer.service (active/running)"},
		{"reloading counts as active", st("siem-indexer.service", "loaded", "reloading", "reload"), false, "", "siem-indexer.service (reloading/reload)"},
		{"stopped", st("siem-manager.service", "loaded", "inactive", "dead"), true, "siemctl services start manager", "siem-manager.service (inactive/dead)"},
		{"failed", st("siem-manager.service", "loaded", "failed", "failed"), true, "siemctl services restart manager", "siem-manager.service (failed/failed)"},
		{"not found", st("shipper.service", "not-found", "inactive", "dead"), true, "install the shipper package", "shipper.service (inactive/dead)"},
		{"starting", st("siem-dashboard.service", "loaded", "activating", "start"), true, "siemctl services start dashboard", "siem-dashboard.service (activating/start)"},
		{"no state from systemd", st("siem-dashboard.service", "loaded", "", ""), true, "siemctl services start dashboard", "siem-dashboard.service (-/-)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Inactive(Judge(unitMap, []units.UnitStatus{tt.st}))
			if (len(v) == 1) != tt.inactive {
				t.Fatalf("inactive %v, want %v", v, tt.inactive)
			}
			s := Judge(unitMap, []units.UnitStatus{tt.st})[0]
			if s.Fix() != tt.fix || s.Describe() != tt.describe {
				t.Errorf("fix %q describe %q", s.Fix(), s.Describe())
			}
		})
	}
	// A unit of no configured component is named by itself.
	if s := Judge(unitMap, []units.UnitStatus{st("other.service", "loaded", "inactive", "dead")})[0]; s.Component != "other.service" {
		t.Errorf("component %q", s.Component)
	}
}

// Ready: a start waits for the service to answer, not only for the unit to
// be active; a service that never answers fails the start.
func TestStartWaitsUntilReady(t *testing.T) {
	comps, _, _ := Select(unitMap, []string{"indexer"})
	for _, tt := range []struct {
		name    string
		answers int // Ready fails this many times first
		wantErr string
	}{
		{"answers at once", 0, ""},
		{"answers after two looks", 2, ""},
		{"never answers", 1000, "does not answer within 1m0s: connection refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := unitstest.NewFake()
			asked, sleeps := 0, 0
			var waits []string
			r := &Runner{Units: f,
				Ready: func(_ context.Context, c Component) error {
					asked++
					if asked <= tt.answers {
						return errors.New("connection refused")
					}
					return nil
				},
				Waiting: func(format string, args ...any) { waits = append(waits, fmt.Sprintf(format, args...)) },
				Sleep: func(context.Context, time.Duration) error {
					if sleeps++; sleeps > 5 {
						return context.DeadlineExceeded
					}
					return nil
				}}
			_, err := r.Start(context.Background(), comps)
			if tt.wantErr == "" {
				if err != nil || asked != tt.answers+1 || len(waits) != tt.answers {
					t.Fatalf("err %v asked %d waits %v", err, asked, waits)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// AwaitReady is the readiness wait of a unit started earlier (a runbook
// step waiting for the indexer): it waits while the service does not
// answer, but not for a unit that died meanwhile (nor does a start); the
// error says what systemd saw.
func TestAwaitReady(t *testing.T) {
	comps, _, _ := Select(unitMap, []string{"indexer"})
	failed := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: units.Failed, SubState: "failed",
		Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1}
	for _, tt := range []struct {
		name    string
		start   bool              // Start instead of AwaitReady
		dies    *units.UnitStatus // the unit's state after the first look
		ready   func(n int) error // Ready's answer to the nth look
		looks   int               // looks at Ready wanted
		wantErr string
	}{
		{name: "answers on the third look", ready: refusedUntil(3), looks: 3},
		{name: "never answers", ready: refusedUntil(1000), looks: 6, wantErr: "does not answer within 1m0s: connection refused"},
		{name: "unit failed while waiting", ready: refusedUntil(1000), dies: &failed, looks: 1,
			wantErr: "siem-indexer.service is not running (exit-code (exit status 1)); its log says why"},
		{name: "unit stopped while waiting", ready: refusedUntil(1000), dies: ptr(unitstest.Dead("siem-indexer.service")), looks: 1,
			wantErr: "siem-indexer.service is not running (inactive/dead)"},
		{name: "a start does not wait for a dead unit either", start: true, ready: refusedUntil(1000), dies: &failed, looks: 1,
			wantErr: "siem-indexer.service is not running (exit-code (exit status 1))"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := unitstest.NewFake()
			f.Set(unitstest.Running("siem-indexer.service"))
			looks, sleeps := 0, 0
			r := &Runner{Units: f,
				Ready: func(context.Context, Component) error {
					looks++
					if tt.dies != nil {
						f.Set(*tt.dies)
					}
					return tt.ready(looks)
				},
				Sleep: func(context.Context, time.Duration) error {
					if sleeps++; sleeps > 5 {
						return context.DeadlineExceeded
					}
					return nil
				}}
			var err error
			if tt.start {
				_, err = r.Start(context.Background(), comps)
			} else {
				err = r.AwaitReady(context.Background(), comps[0])
			}
			if looks != tt.looks {
				t.Errorf("Ready asked %d times, want %d", looks, tt.looks)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
	if err := (&Runner{Units: unitstest.NewFake()}).AwaitReady(context.Background(), comps[0]); err == nil || !strings.Contains(err.Error(), "needs Ready") {
		t.Errorf("AwaitReady without Ready: %v", err)
	}
}

// refusedUntil: connection refused until the nth look.
func refusedUntil(n int) func(int) error {
	return func(look int) error {
		if look < n {
			return errors.New("connection refused")
		}
		return nil
	}
}

func ptr[T any](v T) *T { return &v }

// Stopped is the "processes gone" proof that units.stop's skip,
// units.verify_gone and the data steps' preconditions share.
func TestStopped(t *testing.T) {
	for _, tt := range []struct {
		name, active, sub string
		procs             []int
		want              bool
		state             string
	}{
		{"running", "active", "running", []int{1}, false, "active/running"},
		{"stopping", "deactivating", "stop-sigterm", nil, false, "deactivating/stop-sigterm"},
		{"stopped, a daemon left", "inactive", "dead", []int{4242, 4243}, false, "inactive/dead with 2 processes left (pids 4242 4243)"},
		{"stopped", "inactive", "dead", nil, true, "inactive/dead"},
		{"failed, nothing left", "failed", "failed", nil, true, "failed/failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := unitstest.NewFake()
			f.State["siem-manager.service"] = units.UnitStatus{Name: "siem-manager.service", LoadState: "loaded", ActiveState: tt.active, SubState: tt.sub}
			if tt.procs != nil {
				f.Procs["siem-manager.service"] = [][]int{tt.procs}
			}
			down, state, err := (&Runner{Units: f}).Stopped(context.Background(), "siem-manager.service")
			if err != nil || down != tt.want || state != tt.state {
				t.Errorf("stopped %v %q %v", down, state, err)
			}
		})
	}
}

// TestSelectThisHost: with the unit map of a host that runs only some components (config
// HostUnits), none or "all" selects those, and naming another is refused, naming what runs here.
func TestSelectThisHost(t *testing.T) {
	host := map[string]string{"manager": "wazuh-manager.service", "shipper": "filebeat.service"}
	for _, args := range [][]string{nil, {"all"}} {
		comps, all, err := Select(host, args)
		if err != nil || len(comps) != 2 || comps[0].Name != "manager" || comps[1].Name != "shipper" || all {
			t.Errorf("%v: got %+v all=%v err=%v, want manager, shipper", args, comps, all, err)
		}
	}
	_, _, err := Select(host, []string{"shipper", "indexer"})
	if err == nil || !errors.Is(err, ErrNotOnHost) || !strings.Contains(err.Error(), "indexer not on this host: it runs manager, shipper (the components key") {
		t.Errorf("indexer on a manager host: err %v", err)
	}
}
