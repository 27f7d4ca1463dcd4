package engine

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/renameio/v2"

	"github.com/siemctl/siemctl/internal/redact"
)

// Journal event types, one per transition.
const (
	EvRunStart        = "run-start"
	EvRunResume       = "run-resume"
	EvRunStop         = "run-stop" // not terminal: interrupted or failed, resumable
	EvRunEnd          = "run-end"  // terminal
	EvAbort           = "abort"
	EvStepStart       = "step-start"
	EvStepOK          = "step-ok"
	EvStepSkip        = "step-skip"
	EvStepFail        = "step-fail"
	EvStepInterrupted = "step-interrupted"
	EvStepVerify      = "step-verify"
	EvData            = "data"
	EvUndoStart       = "undo-start"
	EvUndoOK          = "undo-ok"
	EvUndoFail        = "undo-fail"
)

// Event is one line of a run's journal.
type Event struct {
	Seq  int       `json:"seq"`
	Time time.Time `json:"time"`
	Type string    `json:"type"`

	// run-start
	Runbook   *RunbookRef    `json:"runbook,omitempty"`
	Selection *Selection     `json:"selection,omitempty"`
	Steps     []string       `json:"steps,omitempty"`
	Seed      map[string]any `json:"seed,omitempty"`
	Parent    string         `json:"parent,omitempty"`
	Command   string         `json:"command,omitempty"`
	PID       int            `json:"pid,omitempty"`
	Host      string         `json:"host,omitempty"`

	Step     string         `json:"step,omitempty"`
	Kind     string         `json:"kind,omitempty"`
	Attempt  int            `json:"attempt,omitempty"`
	Params   map[string]any `json:"params,omitempty"`
	Deadline *Deadline      `json:"deadline,omitempty"` // step-start, undo-start: a kind's extra time
	Outcome  *Outcome       `json:"outcome,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Error    string         `json:"error,omitempty"`
	NoGo     bool           `json:"no_go,omitempty"`
	Verified bool           `json:"verified,omitempty"`
	Done     bool           `json:"done,omitempty"`
	Duration Millis         `json:"duration_ms,omitempty"`
	Status   string         `json:"status,omitempty"`

	// decision (guided mode): the phase that ended and who decided (Status is the decision)
	Phase    string `json:"phase,omitempty"`
	Operator string `json:"operator,omitempty"`

	// data
	Key   string          `json:"key,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// RunbookRef identifies the runbook a run executes.
type RunbookRef struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Hash   string `json:"sha256"`
}

// Millis is a duration journaled as integer milliseconds.
type Millis int64

// D converts to time.Duration.
func (m Millis) D() time.Duration { return time.Duration(m) * time.Millisecond }

func millis(d time.Duration) Millis { return Millis(d / time.Millisecond) }

// journal is an append-only JSONL file; every line is fsync'd.
type journal struct {
	mu  sync.Mutex
	f   *os.File
	seq int
	now func() time.Time
}

const (
	journalName = "journal.jsonl"
	runbookName = "runbook.yaml"
	latestName  = "latest"
)

// createJournal makes the run directory and its journal.
func createJournal(dir string, now func() time.Time) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, journalName), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		f.Close()
		return nil, err
	}
	return &journal{f: f, now: now}, nil
}

// openJournal reopens an existing journal for appending. A torn last line
// (a crash mid-write) is cut off first so new lines start clean.
func openJournal(dir string, now func() time.Time) (*journal, []Event, error) {
	path := filepath.Join(dir, journalName)
	evs, good, _, err := readJournal(path)
	if err != nil {
		return nil, nil, err
	}
	if err := os.Truncate(path, good); err != nil {
		return nil, nil, fmt.Errorf("trim journal: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	j := &journal{f: f, now: now}
	if n := len(evs); n > 0 {
		j.seq = evs[n-1].Seq
	}
	return j, evs, nil
}

// append writes one event and fsyncs it before returning.
func (j *journal) append(e Event) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	e.Seq = j.seq
	e.Time = j.now().UTC()
	e.Params = redactMap(e.Params)
	e.Seed = redactMap(e.Seed)
	if e.Outcome != nil {
		o := *e.Outcome
		o.Data = redactMap(o.Data)
		e.Outcome = &o
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal %s: %w", e.Type, err)
	}
	b = append(b, '\n')
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("journal %s: %w", e.Type, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal fsync: %w", err)
	}
	return nil
}

func (j *journal) close() error {
	if j == nil || j.f == nil {
		return nil
	}
	return j.f.Close()
}

// readJournal parses a journal. A last line without its newline or not
// parseable is a torn write: it is ignored and reported. A bad line in the
// middle is corruption: an error. good is the byte length of the good prefix.
func readJournal(path string) (evs []Event, good int64, torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, false, fmt.Errorf("read journal: %w", err)
	}
	r := bufio.NewReader(bytes.NewReader(data))
	lineNo := 0
	for {
		line, rerr := r.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			complete := line[len(line)-1] == '\n'
			var e Event
			uerr := json.Unmarshal(bytes.TrimSpace(line), &e)
			switch {
			case uerr == nil && complete:
				evs = append(evs, e)
				good += int64(len(line))
			case rerr == io.EOF:
				// the torn last line of a crash mid-write
				torn = true
			default:
				return nil, 0, false, fmt.Errorf("journal %s line %d is corrupt: %v", path, lineNo, uerr)
			}
		}
		if rerr != nil {
			break
		}
	}
	return evs, good, torn, nil
}

// ReadJournal returns a run's events; torn reports a cut-off last line.
func ReadJournal(stateDir, runID string) (evs []Event, torn bool, err error) {
	evs, _, torn, err = readJournal(JournalPath(stateDir, runID))
	return evs, torn, err
}

func runsDir(stateDir string) string { return filepath.Join(stateDir, "runs") }

// JournalPath is the file that holds run runID's journal.
func JournalPath(stateDir, runID string) string {
	return filepath.Join(runsDir(stateDir), runID, journalName)
}

// newRunID is sortable: UTC time, then randomness against collisions.
func newRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

var runIDRE = regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{6}$`)

// ErrNoRuns means there is no run in the state directory.
var ErrNoRuns = errors.New("no runs recorded")

// ErrUnknownRun means the run id names no run.
var ErrUnknownRun = errors.New("unknown run")

// setLatest points runs/latest at id, atomically (temp file, fsync, rename).
func setLatest(stateDir, id string) error {
	if err := renameio.WriteFile(filepath.Join(runsDir(stateDir), latestName), []byte(id+"\n"), 0o600); err != nil {
		return fmt.Errorf("latest pointer: %w", err)
	}
	return nil
}

// ResolveRun turns "" or "latest" into the latest run's id and checks that
// the run exists.
func ResolveRun(stateDir, id string) (string, error) {
	if id == "" || id == latestName {
		b, err := os.ReadFile(filepath.Join(runsDir(stateDir), latestName))
		if errors.Is(err, fs.ErrNotExist) {
			return "", ErrNoRuns
		}
		if err != nil {
			return "", fmt.Errorf("latest run: %w", err)
		}
		id = strings.TrimSpace(string(b))
	}
	if !runIDRE.MatchString(id) {
		return "", fmt.Errorf("%w %q (run ids look like 20250301T100000Z-a1b2c3)", ErrUnknownRun, id)
	}
	if _, err := os.Stat(filepath.Join(runsDir(stateDir), id, journalName)); err != nil {
		return "", fmt.Errorf("%w %s", ErrUnknownRun, id)
	}
	return id, nil
}

// Runs lists the run ids in the state directory, oldest first.
func Runs(stateDir string) ([]string, error) {
	ents, err := os.ReadDir(runsDir(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := []string{}
	for _, e := range ents {
		if e.IsDir() && runIDRE.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// Redacted replaces journaled values under credential keys.
const Redacted = redact.Mark

// redactMap redacts values under credential keys at any depth, and
// credential fields and URL user info in every string (the engine knows
// no secrets; the steps redact theirs before they return).
func redactMap(m map[string]any) map[string]any { return (*redact.Redactor)(nil).Map(m) }

// redactJSON marshals v and redacts credential keys at any depth.
func redactJSON(key string, v any) (json.RawMessage, error) {
	if redact.SecretKeyRE.MatchString(key) {
		return json.Marshal(Redacted)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return nil, err
	}
	return json.Marshal((*redact.Redactor)(nil).Value("", generic))
}
