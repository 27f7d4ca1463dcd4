// Package lock is siemctl's host lock: one mutating run (upgrade, rollback,
// abort, and every command that changes the stack) at a time per state
// directory.
//
// The lock is a flock(2) on state_dir/lock, so it dies with its process: a
// crashed run never leaves a lock that blocks the next one. Next to it a JSON
// holder record (pid, host, run id, command, start time) says who holds it;
// a record left by a process that died is reported as stale, not obeyed.
package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// ErrHeld is matched (errors.Is) by every *HeldError.
var ErrHeld = errors.New("host lock is held")

// Holder describes the process holding the lock.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	RunID   string    `json:"run_id,omitempty"`
	Command string    `json:"command,omitempty"`
	Started time.Time `json:"started"`
}

func (h Holder) String() string {
	s := fmt.Sprintf("pid %d on %s", h.PID, h.Host)
	if h.Command != "" {
		s += fmt.Sprintf(" (%s)", h.Command)
	}
	if h.RunID != "" {
		s += ", run " + h.RunID
	}
	if !h.Started.IsZero() {
		s += ", since " + h.Started.UTC().Format(time.RFC3339)
	}
	return s
}

// HeldError is returned when another process holds the lock.
type HeldError struct {
	Path string
	// Holder is the holder record, nil if it could not be read (the holder
	// may be between taking the lock and writing its record).
	Holder *Holder
}

func (e *HeldError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("%s is held by another siemctl process", e.Path)
	}
	return fmt.Sprintf("%s is held by %s", e.Path, e.Holder)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lock is a held host lock.
type Lock struct {
	fl     *flock.Flock
	path   string
	holder Holder
	// Stale is the record of a previous holder that died without releasing
	// (its process is gone); nil if there was none. Callers report it.
	Stale *Holder
}

// HostPath is the host lock under stateDir: the one lock that upgrade,
// rollback and every command that changes the stack take.
func HostPath(stateDir string) string { return filepath.Join(stateDir, "lock") }

// RecordPath is where the holder record of lock path lives.
func RecordPath(path string) string { return path + ".json" }

// Acquire takes the lock at path for holder h. PID, Host and Started are
// filled in when zero. With retry > 0 it keeps trying that long (or until ctx
// ends); otherwise a held lock fails at once with *HeldError.
func Acquire(ctx context.Context, path string, h Holder, retry time.Duration) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock dir: %w", err)
	}
	if h.PID == 0 {
		h.PID = os.Getpid()
	}
	if h.Host == "" {
		h.Host, _ = os.Hostname()
	}
	if h.Started.IsZero() {
		h.Started = time.Now().UTC()
	}
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err == nil && !ok && retry > 0 {
		rctx, cancel := context.WithTimeout(ctx, retry)
		ok, err = fl.TryLockContext(rctx, retryDelay(retry))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = nil // retry window over: report who holds it
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		he := &HeldError{Path: path}
		if rec, rerr := readRecord(path); rerr == nil {
			he.Holder = rec
		}
		return nil, he
	}
	l := &Lock{fl: fl, path: path, holder: h}
	if prev, rerr := readRecord(path); rerr == nil && !(prev.PID == h.PID && prev.Host == h.Host) {
		l.Stale = prev
	}
	if err := l.write(); err != nil {
		_ = fl.Unlock()
		return nil, err
	}
	return l, nil
}

func retryDelay(retry time.Duration) time.Duration {
	d := retry / 10
	if d > time.Second {
		d = time.Second
	}
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond
	}
	return d
}

// Holder returns the record this lock was taken with.
func (l *Lock) Holder() Holder { return l.holder }

// SetRunID records the run id once it is known.
func (l *Lock) SetRunID(id string) error {
	l.holder.RunID = id
	return l.write()
}

func (l *Lock) write() error {
	b, err := json.Marshal(l.holder)
	if err != nil {
		return fmt.Errorf("lock record: %w", err)
	}
	if err := renameio.WriteFile(RecordPath(l.path), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("lock record: %w", err)
	}
	return nil
}

// Release removes the holder record and unlocks. It is safe to call twice.
func (l *Lock) Release() error {
	if l == nil || l.fl == nil || !l.fl.Locked() {
		return nil
	}
	rerr := os.Remove(RecordPath(l.path))
	if errors.Is(rerr, fs.ErrNotExist) {
		rerr = nil
	}
	if err := l.fl.Unlock(); err != nil {
		return fmt.Errorf("unlock %s: %w", l.path, err)
	}
	if rerr != nil {
		return fmt.Errorf("remove lock record: %w", rerr)
	}
	return nil
}

// State is what Inspect found.
type State int

const (
	// Free: no holder record.
	Free State = iota
	// Held: a record whose process is alive (or on another host: unknowable, assume held).
	Held
	// Stale: a record whose process on this host is gone.
	Stale
)

func (s State) String() string {
	return [...]string{"free", "held", "stale"}[s]
}

// Inspect reports the lock's holder without taking the lock (so it never
// races a run that is starting). It reads the record and checks whether
// the holding process is alive on this host.
func Inspect(path string) (*Holder, State, error) {
	h, err := readRecord(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Free, nil
	}
	if err != nil {
		return nil, Free, err
	}
	host, _ := os.Hostname()
	if h.Host == host && !alive(h.PID) {
		return h, Stale, nil
	}
	return h, Held, nil
}

func readRecord(path string) (*Holder, error) {
	b, err := os.ReadFile(RecordPath(path))
	if err != nil {
		return nil, err
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("lock record %s: %w", RecordPath(path), err)
	}
	return &h, nil
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
