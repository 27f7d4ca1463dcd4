package fleet

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// The run's journal: beside the state file (rewritten after every step, what status and resume read),
// an append-only JSONL record of what the run did, one line per transition, each synced to disk, as
// the upgrade's engine journals its runs: the run started with its plan, each request sent (its agents,
// the tasks created, the agents refused by code), the agents that failed with their code and cause, each
// wave's gate, the run stopped, paused, resumed, aborted or done. The state forgets what resume retries
// (a failed canary's cause); the journal keeps it.

// Journal event types.
const (
	JournalRunStart  = "run-start"
	JournalRunResume = "run-resume"
	JournalSend      = "send"
	JournalFailed    = "agents-failed"
	JournalWavePass  = "wave-pass"
	JournalWaveFail  = "wave-fail"
	JournalRunStop   = "run-stop" // a wave failed its gate, or the window closed: resumable
	JournalRunEnd    = "run-end"
	JournalAbort     = "abort"
)

// JournalEvent is one line of a run's journal.
type JournalEvent struct {
	Seq    int       `json:"seq"`
	Time   time.Time `json:"time"`
	Type   string    `json:"type"`
	Wave   int       `json:"wave,omitempty"` // 1-based
	Node   string    `json:"node,omitempty"`
	Agents int       `json:"agents,omitempty"`
	Tasks  int       `json:"tasks,omitempty"`
	// Refused are the agents a request refused, by error code.
	Refused map[int][]string `json:"refused,omitempty"`
	// FailedAgents are the agents a read of the evidence found failed, each with its cause and fix.
	FailedAgents []FailedAgent `json:"failed_agents,omitempty"`
	Upgraded     int           `json:"upgraded,omitempty"`
	Failed       int           `json:"failed,omitempty"`
	Allowed      int           `json:"allowed,omitempty"`
	State        string        `json:"state,omitempty"`
	Reason       string        `json:"reason,omitempty"`
	Target       string        `json:"target,omitempty"`
	Waves        []int         `json:"waves,omitempty"` // run-start: the waves' sizes
	Pending      int           `json:"pending,omitempty"`
}

// JournalPath is run id's journal.
func JournalPath(stateDir, id string) string { return filepath.Join(RunsDir(stateDir), id+".jsonl") }

// Journal appends ev (its Seq and, when zero, Time set here) to the run's journal and syncs it.
func (r *UpgradeRun) Journal(stateDir string, now time.Time, ev JournalEvent) error {
	if err := os.MkdirAll(RunsDir(stateDir), 0o700); err != nil {
		return fmt.Errorf("agent upgrade journal: %w", err)
	}
	r.JournalSeq++
	ev.Seq = r.JournalSeq
	if ev.Time.IsZero() {
		ev.Time = now.UTC()
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(JournalPath(stateDir, r.ID), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("agent upgrade journal: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("agent upgrade journal: %w", err)
	}
	return nil
}

// ReadJournal reads run id's journal (a torn last line, from a crash mid-write, is left out).
func ReadJournal(stateDir, id string) ([]JournalEvent, error) {
	f, err := os.Open(JournalPath(stateDir, id))
	if errors.Is(err, os.ErrNotExist) {
		return []JournalEvent{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent upgrade journal: %w", err)
	}
	defer f.Close()
	out := []JournalEvent{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev JournalEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			break
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}

// StartJournal records a new run's start: the target, the waves' sizes, the agents pending.
func (r *UpgradeRun) StartJournal(stateDir string, now time.Time) error {
	ev := JournalEvent{Type: JournalRunStart, Target: r.Target, Pending: r.Counts()[AgentPending]}
	for _, w := range r.Waves {
		ev.Waves = append(ev.Waves, len(w.Agents))
		ev.Agents += len(w.Agents)
	}
	return r.Journal(stateDir, now, ev)
}

// refusedByCode groups a request's refused agents by code.
func refusedByCode(m map[int][]string, code int, ids ...string) map[int][]string {
	if m == nil {
		m = map[int][]string{}
	}
	m[code] = append(m[code], ids...)
	sort.Strings(m[code])
	return m
}
