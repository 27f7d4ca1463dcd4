// Package units talks to systemd over D-Bus (github.com/coreos/go-systemd/v22):
// unit state, start/stop/restart with their job results, waiting for a state
// through PropertiesChanged signals, enable, daemon-reload, reset-failed, the
// processes left in a unit's cgroup, and the unit's last log lines.
//
// A Manager connects either to the system manager (empty address, the stock
// /run/systemd/private socket) or to any systemd private socket given as a
// D-Bus address such as "unix:path=/lab/rt/systemd/private" (the lab's
// manager). Both are peer-to-peer connections: no bus daemon, no Hello.
package units

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Job results as systemd reports them in JobRemoved.
const (
	JobDone       = "done"
	JobFailed     = "failed"
	JobTimeout    = "timeout"
	JobCanceled   = "canceled"
	JobDependency = "dependency"
	JobSkipped    = "skipped"
)

// Active states (the ActiveState property).
const (
	Active       = "active"
	Reloading    = "reloading"
	Inactive     = "inactive"
	Failed       = "failed"
	Activating   = "activating"
	Deactivating = "deactivating"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrNoSuchUnit: systemd does not know the unit (no unit file loaded).
	ErrNoSuchUnit = errors.New("no such unit")
	// ErrUnitFailed: the unit entered the failed state while being waited for.
	ErrUnitFailed = errors.New("unit failed")
	// ErrWaitTimeout: the unit did not reach the wanted state in time.
	ErrWaitTimeout = errors.New("timed out waiting for unit state")
)

// Defaults for Options.
const (
	DefaultSettle       = 500 * time.Millisecond
	DefaultPollInterval = time.Second
)

// UnitStatus is the state of one unit. Service fields are zero for other
// unit types and for units that are not loaded.
type UnitStatus struct {
	Name          string `json:"name"`
	Description   string `json:"description,omitempty"`
	LoadState     string `json:"load_state"`      // loaded | not-found | bad-setting | error | masked
	ActiveState   string `json:"active_state"`    // active | inactive | failed | activating | deactivating | reloading
	SubState      string `json:"sub_state"`       // running | dead | failed | exited | auto-restart | ...
	UnitFileState string `json:"unit_file_state"` // enabled | disabled | static | enabled-runtime | ""
	FragmentPath  string `json:"fragment_path,omitempty"`
	// ActiveSince is ActiveEnterTimestamp: when the unit last became active
	// (zero if never).
	ActiveSince time.Time `json:"active_since,omitzero"`
	// StateChangedAt is StateChangeTimestamp: the last change of ActiveState.
	StateChangedAt time.Time `json:"state_changed_at,omitzero"`
	// StartedAt is InactiveExitTimestamp: when the unit last left
	// inactive (its last start began).
	StartedAt time.Time `json:"started_at,omitzero"`
	// TimeoutStart is the service's TimeoutStartUSec (0: none or unknown).
	TimeoutStart time.Duration `json:"timeout_start,omitempty"`

	MainPID        uint32 `json:"main_pid"`
	Result         string `json:"result,omitempty"` // success | exit-code | signal | timeout | core-dump | ...
	ExecMainCode   int32  `json:"exec_main_code"`   // CLD_* code: 1 exited, 2 killed, 3 dumped
	ExecMainStatus int32  `json:"exec_main_status"` // exit status or signal number
	NRestarts      uint32 `json:"n_restarts"`
	ControlGroup   string `json:"control_group,omitempty"`
	// StandardOutput and StandardError are where the service's output goes,
	// e.g. "journal", "inherit" or "append:/var/log/x.log" (file modes carry
	// their path, read from the unit file because D-Bus does not expose it).
	StandardOutput string `json:"standard_output,omitempty"`
	StandardError  string `json:"standard_error,omitempty"`
	// DropInPaths are the unit's drop-in files.
	DropInPaths []string `json:"drop_in_paths,omitempty"`
}

// Found reports whether systemd has a unit file for the unit.
func (s UnitStatus) Found() bool { return s.LoadState != "" && s.LoadState != "not-found" }

// IsActive reports ActiveState active (or reloading, which is active too).
func (s UnitStatus) IsActive() bool { return s.ActiveState == Active || s.ActiveState == Reloading }

// IsFailed reports ActiveState failed.
func (s UnitStatus) IsFailed() bool { return s.ActiveState == Failed }

// LogFile returns the file the service's stdout (or else stderr) is written
// to, or "" when output goes to the journal or elsewhere.
func (s UnitStatus) LogFile() string {
	if p := fileTarget(s.StandardOutput); p != "" {
		return p
	}
	return fileTarget(s.StandardError)
}

func fileTarget(v string) string {
	mode, path, ok := strings.Cut(v, ":")
	if !ok {
		return ""
	}
	switch mode {
	case "file", "append", "truncate":
		return path
	}
	return ""
}

// Failure describes a failed unit in one line: "exit-code (status 1)".
func (s UnitStatus) Failure() string {
	if s.Result == "" || s.Result == "success" {
		return s.ActiveState + "/" + s.SubState
	}
	switch s.ExecMainCode {
	case 1:
		return fmt.Sprintf("%s (exit status %d)", s.Result, s.ExecMainStatus)
	case 2, 3:
		return fmt.Sprintf("%s (signal %d)", s.Result, s.ExecMainStatus)
	}
	return s.Result
}

// JobError is a start/stop/restart job that did not end "done".
type JobError struct {
	Op     string     // start | stop | restart
	Unit   string     // unit name
	Result string     // failed | timeout | canceled | dependency | skipped
	Status UnitStatus // the unit's state after the job, when it could be read
}

func (e *JobError) Error() string {
	msg := fmt.Sprintf("%s %s: job %s", e.Op, e.Unit, e.Result)
	if e.Status.IsFailed() {
		msg += ": " + e.Status.Failure()
	}
	return msg
}

// Is makes a failed job match ErrUnitFailed when the unit ended failed.
func (e *JobError) Is(target error) bool {
	return target == ErrUnitFailed && e.Status.IsFailed()
}

// StateError is a wait that ended without the wanted state: the unit failed
// (Kind ErrUnitFailed) or the deadline passed (Kind ErrWaitTimeout).
type StateError struct {
	Unit   string
	Want   []string
	Status UnitStatus // the last state seen
	Kind   error
}

func (e *StateError) Error() string {
	if errors.Is(e.Kind, ErrUnitFailed) {
		return fmt.Sprintf("%s failed: %s", e.Unit, e.Status.Failure())
	}
	return fmt.Sprintf("%s: %v (want %s, is %s/%s)", e.Unit, e.Kind, strings.Join(e.Want, "|"), e.Status.ActiveState, e.Status.SubState)
}

func (e *StateError) Unwrap() error { return e.Kind }

// Options tune a Manager. Zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	// Settle is how long StartAndWait watches an active unit for an early
	// failure (Type=simple jobs say "done" before the program fails).
	Settle time.Duration
	// PollInterval re-reads the state while waiting, as a safety net for
	// missed signals (signals remain the primary source).
	PollInterval time.Duration
	// CgroupRoots are the mounted cgroup hierarchies searched by Processes
	// (default: /sys/fs/cgroup/unified, /sys/fs/cgroup/systemd, /sys/fs/cgroup).
	CgroupRoots []string
}

// Manager is a connection to one systemd manager. It is safe for concurrent use.
type Manager struct {
	conn    *sddbus.Conn
	address string
	opts    Options
	log     *slog.Logger

	life    context.Context // the connections' lifetime, ended by Close
	cancel  context.CancelFunc
	subOnce sync.Once
	subErr  error
	sigconn *godbus.Conn // our own signal connection (see subscribe)
	mu      sync.Mutex
	waiters map[godbus.ObjectPath]map[chan struct{}]struct{} // unit object path -> notification channels
	done    chan struct{}
	closed  sync.Once
}

// SystemAddress is the system manager's private socket.
const SystemAddress = "unix:path=/run/systemd/private"

// New connects to the system manager (address "") or to the private socket at
// address ("unix:path=/…/systemd/private"). ctx bounds the connect only; the
// connection lives until Close. A missing socket or a refused connection is a
// *netclient.Error of kind ErrUnreachable; a permission problem is kind
// ErrForbidden.
func New(ctx context.Context, address string, opts ...Options) (*Manager, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if len(o.CgroupRoots) == 0 {
		o.CgroupRoots = []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup"}
	}
	if address == "" {
		address = SystemAddress
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Manager{
		address: address, opts: o, log: o.Logger,
		life: life, cancel: cancel,
		waiters: map[godbus.ObjectPath]map[chan struct{}]struct{}{},
		done:    make(chan struct{}),
	}
	// NewConnection dials twice (calls and signals): each dial is a fresh,
	// authenticated peer-to-peer connection, without Hello.
	conn, err := sddbus.NewConnection(func() (*godbus.Conn, error) { return m.dial(ctx) })
	if err != nil {
		cancel()
		return nil, connectError(address, err)
	}
	m.conn = conn
	return m, nil
}

// dial opens one authenticated connection to the manager's private socket.
// The connection lives until Close; ctx bounds the dial and the auth.
func (m *Manager) dial(ctx context.Context) (*godbus.Conn, error) {
	type result struct {
		c   *godbus.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := godbus.Dial(m.address, godbus.WithContext(m.life))
		if err == nil {
			if err = c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
				_ = c.Close()
				c = nil
			}
		}
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				_ = r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

func connectError(address string, err error) error {
	kind := netclient.ErrUnreachable
	switch {
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM), errors.Is(err, os.ErrPermission):
		kind = netclient.ErrForbidden
	case errors.Is(err, context.DeadlineExceeded):
		kind = netclient.ErrTimeout
	case strings.Contains(err.Error(), "authentication failed"):
		kind = netclient.ErrForbidden
	}
	return &netclient.Error{Op: "connect to systemd", URL: address, Kind: kind, Err: err}
}

// Address is the D-Bus address the manager is connected to.
func (m *Manager) Address() string { return m.address }

// Close closes the connection and ends any subscription goroutine.
func (m *Manager) Close() error {
	m.closed.Do(func() {
		close(m.done)
		m.conn.Close()
		m.cancel() // closes the signal connection too
	})
	return nil
}

// callError classifies a D-Bus method error.
func (m *Manager) callError(op, unit string, err error) error {
	var de godbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.systemd1.NoSuchUnit", "org.freedesktop.systemd1.LoadFailed":
			return fmt.Errorf("%s %s: %w", op, unit, ErrNoSuchUnit)
		case "org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired":
			return &netclient.Error{Op: op + " " + unit, URL: m.address, Kind: netclient.ErrForbidden, Detail: dbusMessage(de), Err: err}
		}
		return fmt.Errorf("%s %s: %s: %s", op, unit, de.Name, dbusMessage(de))
	}
	if errors.Is(err, godbus.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return m.lost(op+" "+unit, err)
	}
	return fmt.Errorf("%s %s: %w", op, unit, err)
}

// lost is op failing because the connection to systemd broke or closed.
func (m *Manager) lost(op string, err error) error {
	return &netclient.Error{Op: op, URL: m.address, Kind: netclient.ErrUnreachable, Err: err}
}

func dbusMessage(e godbus.Error) string {
	if len(e.Body) > 0 {
		if s, ok := e.Body[0].(string); ok {
			return s
		}
	}
	return e.Name
}

// unitSuffixes are the unit types systemd knows.
var unitSuffixes = []string{".service", ".socket", ".target", ".timer", ".mount", ".automount", ".swap", ".path", ".slice", ".scope", ".device"}

// Normalize adds ".service" to a bare unit name, like systemctl does.
func Normalize(unit string) string {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(unit, s) {
			return unit
		}
	}
	return unit + ".service"
}

// typeInterface is the D-Bus interface suffix of a unit's type ("Service").
func typeInterface(unit string) string {
	i := strings.LastIndexByte(unit, '.')
	if i < 0 {
		return ""
	}
	t := unit[i+1:]
	if t == "" {
		return ""
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// Status reads the state of each unit, in order. An unknown unit is not an
// error: its LoadState is "not-found".
func (m *Manager) Status(ctx context.Context, units ...string) ([]UnitStatus, error) {
	out := make([]UnitStatus, 0, len(units))
	for _, u := range units {
		st, err := m.status(ctx, Normalize(u))
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (m *Manager) status(ctx context.Context, unit string) (UnitStatus, error) {
	props, err := m.conn.GetUnitPropertiesContext(ctx, unit)
	if err != nil {
		return UnitStatus{Name: unit}, m.callError("status", unit, err)
	}
	st := UnitStatus{Name: unit}
	applyUnitProps(&st, props)
	if !st.Found() {
		return st, nil
	}
	if iface := typeInterface(unit); iface != "" && iface != "Target" && iface != "Device" {
		tprops, err := m.conn.GetUnitTypePropertiesContext(ctx, unit, iface)
		if err != nil {
			if ctx.Err() != nil {
				return st, m.callError("status", unit, err)
			}
			m.log.Debug("units: type properties unavailable", "unit", unit, "err", err)
		} else {
			applyTypeProps(&st, tprops)
			fillOutputPaths(&st)
		}
	}
	return st, nil
}

func applyUnitProps(st *UnitStatus, p map[string]any) {
	st.Description = str(p["Description"])
	st.LoadState = str(p["LoadState"])
	st.ActiveState = str(p["ActiveState"])
	st.SubState = str(p["SubState"])
	st.UnitFileState = str(p["UnitFileState"])
	st.FragmentPath = str(p["FragmentPath"])
	st.ActiveSince = usecTime(p["ActiveEnterTimestamp"])
	st.StateChangedAt = usecTime(p["StateChangeTimestamp"])
	st.StartedAt = usecTime(p["InactiveExitTimestamp"])
	st.DropInPaths, _ = p["DropInPaths"].([]string)
}

func applyTypeProps(st *UnitStatus, p map[string]any) {
	st.MainPID = u32(p["MainPID"])
	st.Result = str(p["Result"])
	st.ExecMainCode = i32(p["ExecMainCode"])
	st.ExecMainStatus = i32(p["ExecMainStatus"])
	st.NRestarts = u32(p["NRestarts"])
	st.ControlGroup = str(p["ControlGroup"])
	if n, ok := p["TimeoutStartUSec"].(uint64); ok && n > 0 && n < uint64(math.MaxInt64/1000) {
		st.TimeoutStart = time.Duration(n) * time.Microsecond
	}
	st.StandardOutput = outputTarget(str(p["StandardOutput"]), str(p["StandardOutputFileDescriptorName"]))
	st.StandardError = outputTarget(str(p["StandardError"]), str(p["StandardErrorFileDescriptorName"]))
}

// outputTarget joins systemd's StandardOutput mode with the name it carries
// ("fd" + StandardOutputFileDescriptorName).
func outputTarget(mode, fdname string) string {
	if strings.Contains(mode, ":") || fdname == "" {
		return mode
	}
	switch mode {
	case "file", "append", "truncate", "fd":
		return mode + ":" + fdname
	}
	return mode
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func u32(v any) uint32 {
	switch n := v.(type) {
	case uint32:
		return n
	case int32:
		return uint32(n)
	case uint64:
		return uint32(n)
	}
	return 0
}

func i32(v any) int32 {
	switch n := v.(type) {
	case int32:
		return n
	case uint32:
		return int32(n)
	}
	return 0
}

func usecTime(v any) time.Time {
	n, ok := v.(uint64)
	if !ok || n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(n)).UTC()
}

// Start starts a unit and waits for its job. A job that does not end "done"
// is a *JobError. Note that a Type=simple service's start job is "done" as
// soon as the process is forked: use StartAndWait to catch early failures.
func (m *Manager) Start(ctx context.Context, unit string) error {
	return m.job(ctx, "start", Normalize(unit), m.conn.StartUnitContext)
}

// Stop stops a unit and waits for its job.
func (m *Manager) Stop(ctx context.Context, unit string) error {
	return m.job(ctx, "stop", Normalize(unit), m.conn.StopUnitContext)
}

// Restart restarts a unit and waits for its job.
func (m *Manager) Restart(ctx context.Context, unit string) error {
	return m.job(ctx, "restart", Normalize(unit), m.conn.RestartUnitContext)
}

type jobFunc func(ctx context.Context, name, mode string, ch chan<- string) (int, error)

func (m *Manager) job(ctx context.Context, op, unit string, f jobFunc) error {
	// Buffered: go-systemd sends the result while holding its job lock, so
	// the send must not block if we stopped listening (ctx cancelled).
	ch := make(chan string, 1)
	id, err := f(ctx, unit, "replace", ch)
	if err != nil {
		return m.callError(op, unit, err)
	}
	m.log.Debug("units: job queued", "op", op, "unit", unit, "job", id)
	select {
	case res := <-ch:
		m.log.Debug("units: job finished", "op", op, "unit", unit, "job", id, "result", res)
		if res == JobDone {
			return nil
		}
		st, _ := m.status(context.WithoutCancel(ctx), unit)
		return &JobError{Op: op, Unit: unit, Result: res, Status: st}
	case <-ctx.Done():
		return fmt.Errorf("%s %s: waiting for job %d: %w", op, unit, id, ctx.Err())
	case <-m.done:
		return m.lost(op+" "+unit, godbus.ErrClosed)
	}
}

// subscribe opens this Manager's own signal connection, subscribes to
// systemd's signals on it and starts the goroutine that drains them and
// wakes the waiters of the unit whose properties changed.
//
// go-systemd's SetPropertiesSubscriber is not used: its dispatch loop reads
// the subscriber without a lock (a data race under -race), and
// SetSubStateSubscriber floods systemd (coreos/go-systemd issue 502).
func (m *Manager) subscribe(ctx context.Context) error {
	m.subOnce.Do(func() {
		c, err := m.dial(ctx)
		if err != nil {
			m.subErr = connectError(m.address, err)
			return
		}
		ch := make(chan *godbus.Signal, 512)
		c.Signal(ch)
		// On a bus both are needed; on the private socket systemd sends
		// signals anyway, and AddMatch may be refused (ignored).
		_ = c.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.AddMatch", 0,
			"type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'").Err
		obj := c.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
		if err := obj.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.Subscribe", 0).Err; err != nil {
			_ = c.Close()
			m.subErr = m.callError("subscribe", "", err)
			return
		}
		m.sigconn = c
		go m.drain(ch)
	})
	return m.subErr
}

func (m *Manager) drain(ch <-chan *godbus.Signal) {
	for {
		select {
		case <-m.done:
			return
		case sig, ok := <-ch:
			if !ok {
				m.notify("") // connection gone: wake everyone to notice
				return
			}
			if sig.Name != "org.freedesktop.DBus.Properties.PropertiesChanged" || len(sig.Body) < 2 {
				continue
			}
			if iface, _ := sig.Body[0].(string); iface != "org.freedesktop.systemd1.Unit" {
				continue
			}
			changed, _ := sig.Body[1].(map[string]godbus.Variant)
			_, a := changed["ActiveState"]
			_, b := changed["SubState"]
			if a || b {
				m.notify(sig.Path)
			}
		}
	}
}

// unitObjectPath is the D-Bus object path of a unit.
func unitObjectPath(unit string) godbus.ObjectPath {
	return godbus.ObjectPath("/org/freedesktop/systemd1/unit/" + sddbus.PathBusEscape(unit))
}

// notify wakes the waiters of path ("" = everyone), coalescing wake-ups.
func (m *Manager) notify(path godbus.ObjectPath) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, set := range m.waiters {
		if path != "" && p != path {
			continue
		}
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func (m *Manager) addWaiter(unit string) chan struct{} {
	ch := make(chan struct{}, 1)
	p := unitObjectPath(unit)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waiters[p] == nil {
		m.waiters[p] = map[chan struct{}]struct{}{}
	}
	m.waiters[p][ch] = struct{}{}
	return ch
}

func (m *Manager) removeWaiter(unit string, ch chan struct{}) {
	p := unitObjectPath(unit)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waiters[p], ch)
	if len(m.waiters[p]) == 0 {
		delete(m.waiters, p)
	}
}

// Wait waits until the unit's ActiveState is one of want (include Failed in
// want to accept a failed unit, e.g. after a stop that timed out), driven by
// PropertiesChanged signals (with a slow re-read as a safety net). It returns
// early with a *StateError of kind ErrUnitFailed when the unit enters
// "failed" and "failed" is not wanted, and with kind ErrWaitTimeout when
// timeout (if > 0) passes. The last state seen is returned in all cases.
func (m *Manager) Wait(ctx context.Context, unit string, want []string, timeout time.Duration) (UnitStatus, error) {
	unit = Normalize(unit)
	if err := m.subscribe(ctx); err != nil {
		return UnitStatus{Name: unit}, err
	}
	ch := m.addWaiter(unit)
	defer m.removeWaiter(unit, ch)

	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	poll := time.NewTicker(m.opts.PollInterval)
	defer poll.Stop()

	for {
		// Read after registering, so no change between the read and the
		// wait can be missed.
		st, err := m.status(ctx, unit)
		if err != nil {
			return st, err
		}
		if slices.Contains(want, st.ActiveState) {
			return st, nil
		}
		if st.IsFailed() {
			return st, &StateError{Unit: unit, Want: want, Status: st, Kind: ErrUnitFailed}
		}
		select {
		case <-ch:
		case <-poll.C:
		case <-deadline:
			if last, err := m.status(context.WithoutCancel(ctx), unit); err == nil {
				st = last
				if slices.Contains(want, st.ActiveState) {
					return st, nil
				}
			}
			return st, &StateError{Unit: unit, Want: want, Status: st, Kind: ErrWaitTimeout}
		case <-ctx.Done():
			return st, fmt.Errorf("wait for %s: %w", unit, ctx.Err())
		case <-m.done:
			return st, m.lost("wait for "+unit, godbus.ErrClosed)
		}
	}
}

// StartAndWait starts the unit, waits up to timeout for it to be active, then
// watches it for the settle time so that a service failing right after its
// fork (Type=simple with a "done" job) is reported as failed, with its
// Result and exit status.
func (m *Manager) StartAndWait(ctx context.Context, unit string, timeout time.Duration) (UnitStatus, error) {
	return m.jobAndWait(ctx, unit, timeout, m.Start)
}

// RestartAndWait restarts the unit and settles like StartAndWait.
func (m *Manager) RestartAndWait(ctx context.Context, unit string, timeout time.Duration) (UnitStatus, error) {
	return m.jobAndWait(ctx, unit, timeout, m.Restart)
}

// jobAndWait runs a start-like job within timeout, then waits for active and
// settles.
func (m *Manager) jobAndWait(ctx context.Context, unit string, timeout time.Duration, job func(context.Context, string) error) (UnitStatus, error) {
	unit = Normalize(unit)
	// Subscribe before the job so no transition is missed.
	if err := m.subscribe(ctx); err != nil {
		return UnitStatus{Name: unit}, err
	}
	jctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		jctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := job(jctx, unit); err != nil {
		var je *JobError
		if errors.As(err, &je) {
			return je.Status, err
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return UnitStatus{Name: unit}, err
		}
		st, _ := m.status(context.WithoutCancel(ctx), unit)
		return st, &StateError{Unit: unit, Want: []string{Active}, Status: st, Kind: ErrWaitTimeout}
	}
	st, err := m.Wait(ctx, unit, []string{Active, Reloading}, timeout)
	if err != nil {
		return st, err
	}
	return m.settle(ctx, unit, st)
}

// settle watches an active unit for the settle time: failed or inactive then
// is a failure.
func (m *Manager) settle(ctx context.Context, unit string, active UnitStatus) (UnitStatus, error) {
	st, err := m.Wait(ctx, unit, []string{Inactive, Failed}, m.opts.Settle)
	var se *StateError
	switch {
	case errors.As(err, &se) && errors.Is(err, ErrWaitTimeout):
		if se.Status.IsActive() {
			return se.Status, nil
		}
		return active, nil
	case err != nil:
		return st, err
	}
	return st, &StateError{Unit: unit, Want: []string{Active}, Status: st, Kind: ErrUnitFailed}
}

// UnitFileChange is one symlink change made by Enable.
type UnitFileChange struct {
	Type        string `json:"type"` // symlink | unlink
	Filename    string `json:"filename"`
	Destination string `json:"destination"`
}

// Enable enables unit files persistently (like systemctl enable) and reloads
// the manager when links changed. It returns the changes made (none when
// the units were already enabled).
func (m *Manager) Enable(ctx context.Context, units ...string) ([]UnitFileChange, error) {
	names := make([]string, len(units))
	for i, u := range units {
		names[i] = Normalize(u)
	}
	_, raw, err := m.conn.EnableUnitFilesContext(ctx, names, false, false)
	if err != nil {
		return nil, m.callError("enable", strings.Join(names, " "), err)
	}
	changes := make([]UnitFileChange, len(raw))
	for i, c := range raw {
		changes[i] = UnitFileChange{Type: c.Type, Filename: c.Filename, Destination: c.Destination}
	}
	if len(changes) > 0 {
		if err := m.DaemonReload(ctx); err != nil {
			return changes, err
		}
	}
	return changes, nil
}

// Disable disables unit files (like systemctl disable).
func (m *Manager) Disable(ctx context.Context, units ...string) error {
	names := make([]string, len(units))
	for i, u := range units {
		names[i] = Normalize(u)
	}
	changes, err := m.conn.DisableUnitFilesContext(ctx, names, false)
	if err != nil {
		return m.callError("disable", strings.Join(names, " "), err)
	}
	if len(changes) > 0 {
		return m.DaemonReload(ctx)
	}
	return nil
}

// DaemonReload reloads all unit files (systemctl daemon-reload).
func (m *Manager) DaemonReload(ctx context.Context) error {
	if err := m.conn.ReloadContext(ctx); err != nil {
		return m.callError("daemon-reload", "", err)
	}
	return nil
}

// ResetFailed resets a failed unit to inactive (systemctl reset-failed).
// Resetting a unit that is not failed is not an error.
func (m *Manager) ResetFailed(ctx context.Context, unit string) error {
	unit = Normalize(unit)
	if err := m.conn.ResetFailedUnitContext(ctx, unit); err != nil {
		err = m.callError("reset-failed", unit, err)
		if errors.Is(err, ErrNoSuchUnit) {
			return nil // nothing loaded, nothing failed
		}
		return err
	}
	return nil
}
