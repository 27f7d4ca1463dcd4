package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/siemctl/siemctl/internal/manager"
)

// The run of an agent upgrade: the waves one after the other, each sent in requests of at most 500
// agents and never more agents in flight than the manager's module threads, each gated on evidence
// (the agent active again, a keepalive after the send, the target version), the task's own word
// (Updated, Error, Timeout) only re-checked against that evidence. The run's state is one JSON file
// under state_dir/agent-upgrades, rewritten atomically after every step, so status reads it and
// resume picks up where it stopped: the failed wave's agents again, and the agents that were
// disconnected and are back.

// UpgradeAPI is what the run needs of the manager API (*manager.Client).
type UpgradeAPI interface {
	API
	UpgradeAgents(ctx context.Context, ids []string, o manager.UpgradeOptions) (manager.UpgradeCreated, error)
	UpgradeResults(ctx context.Context, ids []string) ([]manager.UpgradeTask, []manager.ItemError, error)
}

// Agent states in a run.
const (
	AgentPlanned  = "planned"
	AgentSent     = "sent"
	AgentUpgraded = "upgraded"
	AgentFailed   = "failed"
	AgentPending  = "pending" // disconnected: not sent
)

// Run and wave states.
const (
	RunRunning = "running"
	RunStopped = "stopped" // a wave failed its gate: resumable
	RunPaused  = "paused"  // the window closed: resumable
	RunDone    = "done"
	RunAborted = "aborted"

	WavePending = "pending"
	WaveRunning = "running"
	WavePassed  = "passed"
	WaveFailed  = "failed"
)

// RunAgent is one agent's part in a run.
type RunAgent struct {
	ID         string    `json:"id"`
	Wave       int       `json:"wave"`
	State      string    `json:"state"`
	Node       string    `json:"node,omitempty"`
	TaskID     int       `json:"task_id,omitempty"`
	Sent       time.Time `json:"sent,omitzero"`
	Done       time.Time `json:"done,omitzero"`
	TaskStatus string    `json:"task_status,omitempty"`
	// AgentStatus is the agent's connection status at the last read of the evidence.
	AgentStatus string        `json:"agent_status,omitempty"`
	Version     string        `json:"version,omitempty"`
	Failure     *UpgradeCause `json:"failure,omitempty"`
	// Evidence says why an agent counts as upgraded (the task's word is noted when it disagreed).
	Evidence string `json:"evidence,omitempty"`
}

// RunWave is one wave.
type RunWave struct {
	Index   int       `json:"index"`
	Agents  []string  `json:"agents"`
	State   string    `json:"state"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	Failed  int       `json:"failed"`
	Allowed int       `json:"allowed"`
	// Held are the agents taken out of the wave when it sent them, pending for resume: disconnected
	// by then, or their cluster node cut from the master.
	Held []string `json:"held,omitempty"`
}

// UpgradeRun is the state of one agent upgrade run.
type UpgradeRun struct {
	ID       string               `json:"id"`
	Target   string               `json:"target"`
	Options  UpgradeWaveOptions   `json:"options"`
	Selector UpgradeSelector      `json:"selector"`
	State    string               `json:"state"`
	Reason   string               `json:"reason,omitempty"`
	Started  time.Time            `json:"started"`
	Ended    time.Time            `json:"ended,omitzero"`
	Waves    []*RunWave           `json:"waves"`
	Agents   map[string]*RunAgent `json:"agents"`
	// Requests counts the upgrade requests sent, Reads the upgrade_result and agent listing requests.
	Requests int `json:"requests"`
	Reads    int `json:"reads"`
	// JournalSeq is the last event's number in the run's journal (upgradejournal.go).
	JournalSeq int `json:"journal_seq,omitempty"`
}

// Counts tallies the agents by state.
func (r *UpgradeRun) Counts() map[string]int {
	out := map[string]int{}
	for _, a := range r.Agents {
		out[a.State]++
	}
	return out
}

// Failures are the failed agents, by id.
func (r *UpgradeRun) Failures() []*RunAgent {
	var out []*RunAgent
	for _, a := range r.Agents {
		if a.State == AgentFailed {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return idLess(out[i].ID, out[j].ID) })
	return out
}

func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// RunsDir is where the runs are kept.
func RunsDir(stateDir string) string { return filepath.Join(stateDir, "agent-upgrades") }

// NewUpgradeRun turns a plan into a run.
func NewUpgradeRun(p UpgradePlan, now time.Time) *UpgradeRun {
	r := &UpgradeRun{ID: now.UTC().Format("20060102T150405.000Z"), Target: p.Target, Options: p.Options, Selector: p.Selector,
		State: RunRunning, Started: now, Agents: map[string]*RunAgent{}}
	nodes := map[string]string{}
	for _, a := range p.Eligible {
		nodes[a.ID] = a.Node
	}
	for i, w := range p.Waves {
		r.Waves = append(r.Waves, &RunWave{Index: i, Agents: w, State: WavePending, Allowed: p.Options.Allowed(len(w))})
		for _, id := range w {
			r.Agents[id] = &RunAgent{ID: id, Wave: i, State: AgentPlanned, Node: nodes[id]}
		}
	}
	for _, a := range p.Pending {
		r.Agents[a.ID] = &RunAgent{ID: a.ID, Wave: -1, State: AgentPending, Node: a.Node, Version: a.Version}
	}
	return r
}

// Save writes the run atomically and marks it the latest.
func (r *UpgradeRun) Save(stateDir string) error {
	dir := RunsDir(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("agent upgrade run: %w", err)
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(filepath.Join(dir, r.ID+".json"), b, 0o600); err != nil {
		return fmt.Errorf("agent upgrade run: %w", err)
	}
	return renameio.WriteFile(filepath.Join(dir, "latest"), []byte(r.ID+"\n"), 0o600)
}

// ErrNoRun means there is no agent upgrade run to show or resume.
var ErrNoRun = errors.New("no agent upgrade run")

// LoadUpgradeRun reads a run (id "" = the latest).
func LoadUpgradeRun(stateDir, id string) (*UpgradeRun, error) {
	dir := RunsDir(stateDir)
	if id == "" {
		b, err := os.ReadFile(filepath.Join(dir, "latest"))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w in %s: start one with `siemctl agents upgrade apply`", ErrNoRun, dir)
		}
		if err != nil {
			return nil, err
		}
		id = strings.TrimSpace(string(b))
	}
	if strings.ContainsAny(id, "/\\") || id == "" || id == "." || id == ".." {
		return nil, fmt.Errorf("%w: run id %q", ErrInvalidInput, id)
	}
	b, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrNoRun, id, err)
	}
	r := &UpgradeRun{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("agent upgrade run %s: %w", id, err)
	}
	return r, nil
}

// Runner runs an UpgradeRun.
type Runner struct {
	API      UpgradeAPI
	StateDir string
	Now      func() time.Time
	Sleep    func(ctx context.Context, d time.Duration) error
	// Poll is the pause between two reads of the evidence.
	Poll time.Duration
	// Window bounds the time from this invocation's start within which new waves may start (0: none).
	Window time.Duration
	// Progress reports each step (nil: silent).
	Progress func(format string, args ...any)
	// Options of the requests (the target is the run's).
	Request manager.UpgradeOptions
}

func (rn *Runner) say(format string, args ...any) {
	if rn.Progress != nil {
		rn.Progress(format, args...)
	}
}

// ErrWaveFailed is the stop rule: more agents of a wave failed than --max-failed allows.
var ErrWaveFailed = errors.New("wave failed its gate")

// Resume prepares a stopped or paused run: the failed wave's failed agents are planned again, and
// the pending agents that are active now join a wave of their own at the end.
func (rn *Runner) Resume(ctx context.Context, r *UpgradeRun) error {
	if r.State == RunDone || r.State == RunAborted {
		// A finished run still has pending agents to pick up.
		if r.State == RunAborted || r.Counts()[AgentPending] == 0 {
			return fmt.Errorf("%w: run %s is %s; nothing to resume", ErrInvalidInput, r.ID, r.State)
		}
	}
	again := 0
	for _, w := range r.Waves {
		if w.State == WaveFailed {
			w.State, w.Failed = WaveRunning, 0
			for _, id := range w.Agents {
				if a := r.Agents[id]; a.State == AgentFailed {
					a.State, a.Failure, a.TaskID, a.TaskStatus = AgentPlanned, nil, 0, ""
					again++
				}
			}
		}
	}
	returned := 0
	var pend []string
	for id, a := range r.Agents {
		if a.State == AgentPending {
			pend = append(pend, id)
		}
	}
	if len(pend) > 0 {
		sort.Slice(pend, func(i, j int) bool { return idLess(pend[i], pend[j]) })
		back, err := rn.active(ctx, r, pend)
		if err != nil {
			return err
		}
		var ids []string
		for _, id := range pend {
			if a, ok := back[id]; ok {
				r.Agents[id].Node = a.NodeName
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			w := &RunWave{Index: len(r.Waves), Agents: ids, State: WavePending, Allowed: r.Options.Allowed(len(ids))}
			r.Waves = append(r.Waves, w)
			for _, id := range ids {
				r.Agents[id].State, r.Agents[id].Wave, r.Agents[id].Failure = AgentPlanned, w.Index, nil
			}
			rn.say("%d pending agent(s) are back: wave %d", len(ids), w.Index+1)
			returned = len(ids)
		}
	}
	r.State, r.Reason, r.Ended = RunRunning, "", time.Time{}
	if err := r.Journal(rn.StateDir, rn.Now(), JournalEvent{Type: JournalRunResume, Agents: again, Pending: returned,
		Reason: fmt.Sprintf("%d failed agent(s) planned again, %d pending agent(s) back", again, returned)}); err != nil {
		return err
	}
	return r.Save(rn.StateDir)
}

// agents reads the agents ids (500 a request, each counted in r.Reads) with what the gates judge:
// status, version, last keepalive and node.
func (rn *Runner) agents(ctx context.Context, r *UpgradeRun, ids []string) (map[string]manager.Agent, error) {
	out := map[string]manager.Agent{}
	for start := 0; start < len(ids); start += manager.MaxUpgradeRequest {
		chunk := ids[start:min(start+manager.MaxUpgradeRequest, len(ids))]
		r.Reads++
		for a, err := range rn.API.Agents(ctx, manager.AgentQuery{IDs: chunk, Limit: len(chunk),
			Select: []string{"status", "version", "lastKeepAlive", "node_name"}}) {
			if err != nil {
				return nil, err
			}
			out[a.ID] = a
		}
	}
	return out, nil
}

// active reads the agents and returns those active now.
func (rn *Runner) active(ctx context.Context, r *UpgradeRun, ids []string) (map[string]manager.Agent, error) {
	all, err := rn.agents(ctx, r, ids)
	if err != nil {
		return nil, err
	}
	maps.DeleteFunc(all, func(_ string, a manager.Agent) bool { return a.Status != manager.AgentActive })
	return all, nil
}

// Run runs the waves that are not passed yet, in order, and returns ErrWaveFailed (wrapped) when the
// stop rule stopped it.
func (rn *Runner) Run(ctx context.Context, r *UpgradeRun) error {
	target, err := manager.ParseVersion(r.Target)
	if err != nil {
		return err
	}
	start := rn.Now()
	for _, w := range r.Waves {
		if w.State == WavePassed {
			continue
		}
		if rn.Window > 0 && w.State == WavePending && rn.Now().Sub(start) >= rn.Window {
			r.State, r.Reason = RunPaused, fmt.Sprintf("the window (%s) closed before wave %d", rn.Window, w.Index+1)
			if err := r.Journal(rn.StateDir, rn.Now(), JournalEvent{Type: JournalRunStop, State: r.State, Reason: r.Reason}); err != nil {
				return err
			}
			return r.Save(rn.StateDir)
		}
		if err := rn.wave(ctx, r, w, target); err != nil {
			_ = r.Save(rn.StateDir)
			return err
		}
		if w.Failed > w.Allowed {
			w.State, w.Ended = WaveFailed, rn.Now()
			r.State, r.Ended = RunStopped, rn.Now()
			r.Reason = fmt.Sprintf("wave %d: %d of %d agents failed, at most %d allowed (--max-failed)", w.Index+1, w.Failed, len(w.Agents), w.Allowed)
			if err := rn.journalWave(r, w, JournalWaveFail); err != nil {
				return err
			}
			if err := r.Journal(rn.StateDir, rn.Now(), JournalEvent{Type: JournalRunStop, State: r.State, Reason: r.Reason}); err != nil {
				return err
			}
			if err := r.Save(rn.StateDir); err != nil {
				return err
			}
			return fmt.Errorf("%w: %s", ErrWaveFailed, r.Reason)
		}
		w.State, w.Ended = WavePassed, rn.Now()
		rn.say("wave %d passed: %d agents, %d failed (at most %d allowed)", w.Index+1, len(w.Agents), w.Failed, w.Allowed)
		if err := rn.journalWave(r, w, JournalWavePass); err != nil {
			return err
		}
		if err := r.Save(rn.StateDir); err != nil {
			return err
		}
	}
	r.State, r.Ended = RunDone, rn.Now()
	type nodeCode struct {
		node string
		code int
	}
	held := map[nodeCode]int{}
	for _, a := range r.Agents {
		if a.State == AgentPending && a.Failure != nil && nodeCut(a.Failure.Code) {
			held[nodeCode{a.Node, a.Failure.Code}]++
		}
	}
	n := r.Counts()[AgentPending]
	var parts []string
	for k, h := range held {
		n -= h
		parts = append(parts, fmt.Sprintf("%d agent(s) of node %s, not connected to the master (%d)", h, k.node, k.code))
	}
	sort.Strings(parts)
	if n > 0 {
		parts = append([]string{fmt.Sprintf("%d disconnected agent(s)", n)}, parts...)
	}
	if len(parts) > 0 {
		r.Reason = strings.Join(parts, ", ") + " pending: `siemctl agents upgrade resume` sends them once they are back"
	}
	c := r.Counts()
	if err := r.Journal(rn.StateDir, rn.Now(), JournalEvent{Type: JournalRunEnd, State: r.State, Reason: r.Reason,
		Upgraded: c[AgentUpgraded], Failed: c[AgentFailed], Pending: c[AgentPending]}); err != nil {
		return err
	}
	return r.Save(rn.StateDir)
}

// wave sends a wave's agents, never more WPK sends under way than the limit (the module's threads),
// and waits until each is upgraded or failed. An agent whose send is over (its task Updating or
// later, or the agent restarting) holds no thread: the next agents are sent while it restarts.
func (rn *Runner) wave(ctx context.Context, r *UpgradeRun, w *RunWave, target manager.Version) error {
	if w.State != WaveRunning {
		w.State, w.Started = WaveRunning, rn.Now()
	}
	rn.say("wave %d: %d agent(s)", w.Index+1, len(w.Agents))
	limit := max(r.Options.InFlight, 1)
	var queue []string
	for _, id := range w.Agents {
		if r.Agents[id].State == AgentPlanned {
			queue = append(queue, id)
		}
	}
	for {
		sending := r.sending(w)
		for len(queue) > 0 && sending < limit {
			n := min(manager.MaxUpgradeRequest, limit-sending, len(queue))
			if err := rn.send(ctx, r, w, queue[:n], target); err != nil {
				return err
			}
			queue = queue[n:]
			sending = r.sending(w)
		}
		if err := r.Save(rn.StateDir); err != nil {
			return err
		}
		inFlight := r.inFlight(w)
		if len(inFlight) == 0 && len(queue) == 0 {
			return nil
		}
		if err := rn.Sleep(ctx, rn.Poll); err != nil {
			return err
		}
		if err := rn.judge(ctx, r, w, inFlight, target); err != nil {
			return err
		}
	}
}

// sending counts the wave's agents whose WPK send may still hold a module thread: sent, the task
// not yet past In progress by its last word, and the agent not seen restarting (while it restarts
// the API answers 1707 for its task instead of Updating).
func (r *UpgradeRun) sending(w *RunWave) int {
	n := 0
	for _, id := range w.Agents {
		a := r.Agents[id]
		if a.State == AgentSent && a.AgentStatus != manager.AgentDisconnected &&
			(a.TaskStatus == "" || a.TaskStatus == manager.TaskPending || a.TaskStatus == manager.TaskInProgress) {
			n++
		}
	}
	return n
}

// journalWave records a wave's gate: its agents, how many upgraded and failed, how many may fail.
func (rn *Runner) journalWave(r *UpgradeRun, w *RunWave, typ string) error {
	up := 0
	for _, id := range w.Agents {
		if r.Agents[id].State == AgentUpgraded {
			up++
		}
	}
	return r.Journal(rn.StateDir, rn.Now(), JournalEvent{Type: typ, Wave: w.Index + 1, Agents: len(w.Agents), Upgraded: up, Failed: w.Failed, Allowed: w.Allowed})
}

func (r *UpgradeRun) inFlight(w *RunWave) []string {
	var out []string
	for _, id := range w.Agents {
		if r.Agents[id].State == AgentSent {
			out = append(out, id)
		}
	}
	return out
}

// send creates the tasks of one request, per cluster node (node_name: the master passes each
// worker's agents to it).
func (rn *Runner) send(ctx context.Context, r *UpgradeRun, w *RunWave, ids []string, target manager.Version) error {
	byNode := map[string][]string{}
	var nodes []string
	for _, id := range ids {
		n := r.Agents[id].Node
		if _, ok := byNode[n]; !ok {
			nodes = append(nodes, n)
		}
		byNode[n] = append(byNode[n], id)
	}
	for _, node := range nodes {
		o := rn.Request
		o.Version, o.NodeName = target.String(), node
		r.Requests++
		res, err := rn.API.UpgradeAgents(ctx, byNode[node], o)
		now := rn.Now()
		if err != nil {
			var ae *manager.APIError
			if errors.As(err, &ae) && (ae.Code >= 1810 && ae.Code < 1900 || nodeCut(ae.Code)) {
				// The manager refused the whole request: every agent of it fails with that cause, or,
				// when its node is cut from the master, waits pending for resume.
				if err := r.Journal(rn.StateDir, now, JournalEvent{Type: JournalSend, Wave: w.Index + 1, Node: node, Agents: len(byNode[node]),
					Refused: refusedByCode(nil, ae.Code, byNode[node]...)}); err != nil {
					return err
				}
				if nodeCut(ae.Code) {
					rn.holdNode(r, w, node, byNode[node], ae.Code)
					continue
				}
				c := CauseOf(ae.Code, ae.Detail)
				for _, id := range byNode[node] {
					a := r.Agents[id]
					a.State, a.Done, a.Failure = AgentFailed, now, &c
					w.Failed++
				}
				rn.say("node %s: %s", nodeLabel(node), c.Cause)
				continue
			}
			return err
		}
		for id, task := range res.Tasks {
			if a := r.Agents[id]; a != nil {
				a.State, a.TaskID, a.Sent, a.TaskStatus, a.AgentStatus = AgentSent, task, now, manager.TaskPending, manager.AgentActive
			}
		}
		ev := JournalEvent{Type: JournalSend, Wave: w.Index + 1, Node: node, Agents: len(byNode[node]), Tasks: len(res.Tasks)}
		for _, f := range res.Failed {
			ev.Refused = refusedByCode(ev.Refused, f.Code, f.IDs...)
		}
		if err := r.Journal(rn.StateDir, now, ev); err != nil {
			return err
		}
		cut, cutCode := "", 0
		for _, f := range res.Failed {
			for _, id := range f.IDs {
				a := r.Agents[id]
				if a == nil {
					if nodeCut(f.Code) {
						// The master names a cut node's share by the node's name (forward()'s ids).
						cut, cutCode = id, f.Code
					}
					continue
				}
				switch f.Code {
				case manager.CodeAgentNotActive, 1818:
					a.State, a.Wave = AgentPending, -1
					w.Agents = slices.DeleteFunc(w.Agents, func(s string) bool { return s == id })
					w.Held = append(w.Held, id)
				case 1820, 1822:
					// Already upgrading, or at the target already: the evidence decides.
					a.State, a.Sent = AgentSent, now
				default:
					c := CauseOf(f.Code, f.Message)
					a.State, a.Done, a.Failure = AgentFailed, now, &c
					w.Failed++
				}
			}
		}
		if cut != "" {
			// The agents the answer does not name are the cut node's share.
			var left []string
			for _, id := range byNode[node] {
				if a := r.Agents[id]; a.State == AgentPlanned {
					a.Node = cut
					left = append(left, id)
				}
			}
			rn.holdNode(r, w, cut, left, cutCode)
		}
		rn.say("sent %d agent(s)%s: %d task(s)", len(byNode[node]), nodeSuffix(node), len(res.Tasks))
	}
	return nil
}

// nodeCut says whether an error code means a cluster node cut from the master: 3022 "Unknown node ID"
// is the master's answer for a worker that is not connected (dapi.py forward()), 3023 "Worker node is
// not connected to master" a worker's own answer when it cannot reach the master.
func nodeCut(code int) bool { return code == 3022 || code == 3023 }

// holdNode puts a cut node's share of the request back to pending (only that node's agents stop),
// named with the node, for resume.
func (rn *Runner) holdNode(r *UpgradeRun, w *RunWave, node string, ids []string, code int) {
	c := UpgradeCause{Code: code, Cause: fmt.Sprintf("cluster node %s is not connected to the master (%d): its agents cannot be reached", nodeLabel(node), code),
		Fix: fmt.Sprintf("reconnect the worker (%s: `siemctl health` on it, wazuh-clusterd, the cluster key and port 1516), then `siemctl agents upgrade resume`", nodeLabel(node))}
	for _, id := range ids {
		a := r.Agents[id]
		cc := c
		a.State, a.Wave, a.Failure = AgentPending, -1, &cc
		w.Agents = slices.DeleteFunc(w.Agents, func(s string) bool { return s == id })
		w.Held = append(w.Held, id)
	}
	rn.say("node %s: %s", nodeLabel(node), c.Cause)
}

func nodeLabel(n string) string {
	if n == "" {
		return "(unknown)"
	}
	return n
}

func nodeSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " on node " + n
}

// judge reads the evidence of the agents in flight (their state and their tasks, in bulk) and
// settles those that are upgraded or failed.
func (rn *Runner) judge(ctx context.Context, r *UpgradeRun, w *RunWave, ids []string, target manager.Version) error {
	agents, err := rn.agents(ctx, r, ids)
	if err != nil {
		return err
	}
	r.Reads += (len(ids) + manager.MaxUpgradeRequest - 1) / manager.MaxUpgradeRequest
	tasks, _, err := rn.API.UpgradeResults(ctx, ids)
	if err != nil {
		return err
	}
	byAgent := map[string]manager.UpgradeTask{}
	for _, t := range tasks {
		byAgent[t.Agent] = t
	}
	now := rn.Now()
	var failed []FailedAgent
	for _, id := range ids {
		ra := r.Agents[id]
		ag, seen := agents[id]
		t, hasTask := byAgent[id]
		if hasTask {
			ra.TaskStatus = t.Status
		}
		if seen {
			ra.Version, ra.AgentStatus = strings.TrimPrefix(ag.Version, "Wazuh "), ag.Status
		}
		v, verr := ag.ParsedVersion()
		upgraded := seen && ag.Status == manager.AgentActive && verr == nil && !v.Less(target) && !ag.LastKeepAlive.Before(ra.Sent.Add(-time.Second))
		switch {
		case upgraded:
			ra.State, ra.Done = AgentUpgraded, now
			ra.Evidence = "active, keepalive " + ag.LastKeepAlive.UTC().Format(time.RFC3339) + ", " + ra.Version
			if hasTask && t.Status != manager.TaskUpdated {
				ra.Evidence += " (the task says " + t.Status + ")"
			}
		case hasTask && t.Status == manager.TaskError:
			c := CauseOf(TaskErrorCode(t.ErrorMsg), t.ErrorMsg)
			ra.State, ra.Done, ra.Failure = AgentFailed, now, &c
			w.Failed++
		case hasTask && t.Status == manager.TaskTimeout && seen && ag.Status == manager.AgentActive:
			c := UpgradeCause{Cause: fmt.Sprintf("the task timed out and the agent still reports %s, not %s", ra.Version, target),
				Fix: "check the agent's upgrade.log and ossec.log on its host; `siemctl agents upgrade resume` sends it again"}
			ra.State, ra.Done, ra.Failure = AgentFailed, now, &c
			w.Failed++
		case now.Sub(ra.Sent) > r.Options.AgentWait:
			c := UpgradeCause{Cause: fmt.Sprintf("no evidence of %s within the agent wait (%s): the agent reports %s, %s", target, r.Options.AgentWait, orDash(ra.Version), orDash(ag.Status)),
				Fix: "check the agent's service and upgrade.log on its host, then `siemctl agents upgrade resume`"}
			if !seen || ag.Status != manager.AgentActive {
				c = UpgradeCause{Cause: fmt.Sprintf("the agent disconnected during the upgrade and did not come back within the agent wait (%s)", r.Options.AgentWait),
					Fix: "start the agent on its host (its service, the network to the manager's port 1514); once it is back `siemctl agents upgrade resume` checks it again"}
			}
			ra.State, ra.Done, ra.Failure = AgentFailed, now, &c
			w.Failed++
		}
		if ra.State == AgentFailed {
			failed = append(failed, FailedAgent{ID: id, Node: ra.Node, Cause: *ra.Failure})
		}
	}
	if len(failed) > 0 {
		// One line for the agents this read found failed: their causes stay recorded after resume
		// retries them.
		return r.Journal(rn.StateDir, now, JournalEvent{Type: JournalFailed, Wave: w.Index + 1, FailedAgents: failed})
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
