// Package unitstest holds Fake, the in-memory service manager for tests of
// the callers of package units (internal/ops/services, internal/steps,
// internal/cmd/services). Package units itself is tested against a real
// private manager (lab.StartSystemd).
package unitstest

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/units"
)

// SiemUnits are the four units of the reference layout, the ones NewFake knows.
var SiemUnits = []string{"siem-indexer.service", "siem-manager.service", "siem-dashboard.service", "shipper.service"}

// Fake is an in-memory service manager for tests of the callers of package
// units: units change state as soon as they are told, every change is
// recorded in Calls ("start u", "restart u", "stop u", "procs u",
// "reset-failed u", "enable u1 u2", "daemon-reload"), and a test scripts
// failures (FailOn), lingering processes (Procs) and what Enable answers
// (Changes). Status and Wait are answered from State and not recorded.
type Fake struct {
	mu       sync.Mutex
	Calls    []string
	State    map[string]units.UnitStatus
	FailOn   map[string]string  // "start siem-manager.service" -> the failure's Result; "stop u" -> killed by its stop signal
	Procs    map[string][][]int // per unit: what successive Processes calls answer (the last one repeats)
	Timeouts map[string]time.Duration
	Changes  []units.UnitFileChange // what Enable answers
	// ActivePIDs are what Processes answers for an active unit (Procs is
	// consulted for the others).
	ActivePIDs []int
}

// Running is the status the fake gives a started unit.
func Running(u string) units.UnitStatus {
	return units.UnitStatus{Name: u, LoadState: "loaded", ActiveState: units.Active, SubState: "running"}
}

// Dead is the status the fake gives a stopped unit.
func Dead(u string) units.UnitStatus {
	return units.UnitStatus{Name: u, LoadState: "loaded", ActiveState: units.Inactive, SubState: "dead"}
}

// Set replaces a unit's state; safe while the code under test runs.
func (f *Fake) Set(st units.UnitStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.State[st.Name] = st
}

// NewFake returns a Fake whose SiemUnits are loaded and inactive/dead.
func NewFake() *Fake {
	f := &Fake{State: map[string]units.UnitStatus{}, FailOn: map[string]string{}, Procs: map[string][][]int{}, Timeouts: map[string]time.Duration{}}
	for _, u := range SiemUnits {
		f.State[u] = Dead(u)
	}
	return f
}

func (f *Fake) rec(s string) { f.Calls = append(f.Calls, s) }

// CallsOf returns the recorded calls that start with prefix.
func (f *Fake) CallsOf(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.Calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// Status answers from State; a unit it does not know is not-found.
func (f *Fake) Status(_ context.Context, us ...string) ([]units.UnitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []units.UnitStatus{}
	for _, u := range us {
		st, ok := f.State[u]
		if !ok {
			st = units.UnitStatus{Name: u, LoadState: "not-found", ActiveState: units.Inactive, SubState: "dead"}
		}
		out = append(out, st)
	}
	return out, nil
}

func (f *Fake) act(op, u string, timeout time.Duration) (units.UnitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec(op + " " + u)
	f.Timeouts[op+" "+u] = timeout
	if res, ok := f.FailOn[op+" "+u]; ok {
		st := units.UnitStatus{Name: u, LoadState: "loaded", ActiveState: units.Failed, SubState: "failed", Result: res, ExecMainCode: 1, ExecMainStatus: 1}
		f.State[u] = st
		return st, &units.StateError{Unit: u, Want: []string{units.Active}, Status: st, Kind: units.ErrUnitFailed}
	}
	st, ok := f.State[u]
	if !ok {
		st = units.UnitStatus{Name: u}
	}
	st.LoadState, st.ActiveState, st.SubState, st.Result = "loaded", units.Active, "running", ""
	if st.MainPID == 0 {
		st.MainPID = 42
	}
	f.State[u] = st
	return st, nil
}

// StartAndWait records "start u" and the wait it was given.
func (f *Fake) StartAndWait(_ context.Context, u string, t time.Duration) (units.UnitStatus, error) {
	return f.act("start", u, t)
}

// RestartAndWait records "restart u" and the wait it was given.
func (f *Fake) RestartAndWait(_ context.Context, u string, t time.Duration) (units.UnitStatus, error) {
	return f.act("restart", u, t)
}

// Stop records "stop u"; the unit is inactive/dead, or failed with the
// FailOn["stop u"] result.
func (f *Fake) Stop(_ context.Context, u string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec("stop " + u)
	f.State[u] = Dead(u)
	if res, ok := f.FailOn["stop "+u]; ok {
		f.State[u] = units.UnitStatus{Name: u, LoadState: "loaded", ActiveState: units.Failed, SubState: "failed", Result: res}
	}
	return nil
}

// Wait answers at once with the unit's state.
func (f *Fake) Wait(_ context.Context, u string, _ []string, _ time.Duration) (units.UnitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.State[u], nil
}

// Processes records "procs u" and answers ActivePIDs for an active unit,
// else the next of Procs[u].
func (f *Fake) Processes(_ context.Context, u string) ([]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec("procs " + u)
	if f.State[u].IsActive() && f.ActivePIDs != nil {
		return f.ActivePIDs, nil
	}
	seq := f.Procs[u]
	if len(seq) == 0 {
		return nil, nil
	}
	p := seq[0]
	if len(seq) > 1 {
		f.Procs[u] = seq[1:]
	}
	return p, nil
}

// ResetFailed records "reset-failed u" and turns a failed unit inactive/dead.
func (f *Fake) ResetFailed(_ context.Context, u string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec("reset-failed " + u)
	if st := f.State[u]; st.IsFailed() {
		st.ActiveState, st.SubState, st.Result = units.Inactive, "dead", ""
		f.State[u] = st
	}
	return nil
}

// Enable records "enable u1 u2 ..." and answers Changes.
func (f *Fake) Enable(_ context.Context, us ...string) ([]units.UnitFileChange, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec("enable " + strings.Join(us, " "))
	return f.Changes, nil
}

// DaemonReload records "daemon-reload".
func (f *Fake) DaemonReload(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec("daemon-reload")
	return nil
}
