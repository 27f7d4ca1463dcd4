package manager

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// The agent upgrade module (wazuh-modulesd's agent-upgrade with the task manager), as the API sees it:
// PUT /agents/upgrade and /agents/upgrade_custom create one task per eligible agent; the module runs
// at most max_threads WPK sends at once (the others wait, Pending), then the agent installs and
// restarts (Updating, the agent disconnected) and reconnects with the new version (Updated). A task
// still unfinished task_timeout after it was created becomes Timeout. Times are computed from the
// clock when asked, so nothing runs in the background; what happens to the agents (disconnected while
// restarting, back with the new version, gone for good) is written to the agents database when an
// API request sees it (settle).

// Task statuses as the task manager reports them.
const (
	TaskPending    = "Pending"
	TaskInProgress = "In progress"
	TaskUpdating   = "Updating"
	TaskUpdated    = "Updated"
	TaskError      = "Error"
	TaskTimeout    = "Timeout"
)

// The upgrade module's error messages (wazuh-modulesd wm_agent_upgrade upgrade_error_codes); the API
// answers them with code 1810 + the module's code.
const (
	msgNoWPK           = "The WPK for this platform is not available"
	msgAlreadyUpgrade  = "Upgrade procedure could not start. Agent already upgrading"
	msgNotMinimal      = "Remote upgrade is not available for this agent version"
	msgGreaterEqual    = "Current agent version is greater or equal"
	msgDirect5         = "Direct upgrade to v5.0.0 is not supported. Please upgrade to v4.14.x first"
	msgSendLockRestart = "Send lock restart error"
	msgWPKMissing      = "The WPK file does not exist"
)

// noWPKPlatforms are the platforms Wazuh publishes no WPK for (packages.wazuh.com/4.x/wpk has linux,
// windows and macos packages only).
var noWPKPlatforms = map[string]bool{"solaris": true, "sunos": true, "aix": true, "hp-ux": true, "hpux": true}

// UpgradeTiming is how long the module's steps take (the <emulator> section's upgrade_* elements).
type UpgradeTiming struct {
	Send        time.Duration // sending the WPK in chunks (a module thread is busy)
	Restart     time.Duration // the agent installs and restarts (disconnected)
	TaskTimeout time.Duration // a task unfinished after this is Timeout
}

// task is one upgrade task of the task manager.
type task struct {
	ID      int
	Agent   int
	Node    string
	Command string // upgrade or upgrade_custom
	Target  string // "Wazuh v4.10.0"
	Created time.Time
	Start   time.Time // the WPK send starts (a module thread is free)
	// fate: what the fault set at creation does to it: "" upgrades, "drop" (the agent drops mid-upgrade
	// and never comes back), "timeout" (upgraded, reported Timeout), "stuck" (upgraded, stays Updating),
	// "refused" (the send fails: bulk beyond max_threads), "nowpk-file" (upgrade_custom, file missing).
	Fate    string
	settled int // 0 nothing written, 1 the restart written, 2 the end written
	// Remote: on the master, a task a worker's module reported (its agent is the worker's), with the
	// worker's timing; the master learns its progress only while the worker is connected.
	Remote bool
	Timing UpgradeTiming
}

type upgradeModule struct {
	mu      sync.Mutex
	nextID  int
	tasks   map[int]*task // latest task per agent
	all     []*task       // live tasks (not settled to the end)
	slots   []time.Time   // when each module thread is free again
	threads int
}

func newUpgradeModule() *upgradeModule { return &upgradeModule{nextID: 1, tasks: map[int]*task{}} }

// maxThreads is <agent-upgrade><max_threads> (0: one per core, at most 256).
func maxThreads(conf *Config) int {
	n := 8
	if conf != nil && conf.UpgradeMaxThreads >= 0 {
		n = conf.UpgradeMaxThreads
	}
	if n == 0 {
		n = min(runtime.NumCPU(), 256)
	}
	return n
}

func timingOf(conf *Config) UpgradeTiming {
	t := UpgradeTiming{Send: 4 * time.Second, Restart: 6 * time.Second, TaskTimeout: 900 * time.Second}
	if conf != nil {
		if conf.UpgradeSendTime > 0 {
			t.Send = conf.UpgradeSendTime
		}
		if conf.UpgradeRestartTime > 0 {
			t.Restart = conf.UpgradeRestartTime
		}
		if conf.UpgradeTaskTimeout > 0 {
			t.TaskTimeout = conf.UpgradeTaskTimeout
		}
	}
	return t
}

// status is the task's status at now, and the time of its last change.
func (t *task) status(now time.Time, tm UpgradeTiming) (string, time.Time, string) {
	sent := t.Start.Add(tm.Send)
	done := sent.Add(tm.Restart)
	deadline := t.Created.Add(tm.TaskTimeout)
	switch {
	case now.Before(t.Start):
		return TaskPending, t.Created, ""
	case t.Fate == "refused":
		return TaskError, t.Start, msgSendLockRestart
	case t.Fate == "nowpk-file":
		return TaskError, t.Start, msgWPKMissing
	case now.Before(sent):
		return TaskInProgress, t.Start, ""
	case t.Fate == "drop" && !now.Before(deadline):
		return TaskTimeout, deadline, ""
	case t.Fate == "drop" || now.Before(done):
		return TaskUpdating, sent, ""
	case t.Fate == "timeout":
		return TaskTimeout, done, ""
	case t.Fate == "stuck":
		return TaskUpdating, sent, ""
	}
	return TaskUpdated, done, ""
}

// live reports whether the task still holds the agent (a new upgrade answers 1820).
func (t *task) live(now time.Time, tm UpgradeTiming) bool {
	st, _, _ := t.status(now, tm)
	return st == TaskPending || st == TaskInProgress || st == TaskUpdating
}

// create queues a task; the start waits for a free module thread. refuse makes the sends beyond the
// threads fail (the upgrade-bulk-refused fault).
func (m *upgradeModule) create(agent int, node, command, target string, now time.Time, conf *Config, fate string, refuse bool) *task {
	n := maxThreads(conf)
	tm := timingOf(conf)
	if len(m.slots) != n {
		m.slots = make([]time.Time, n)
	}
	sort.Slice(m.slots, func(i, j int) bool { return m.slots[i].Before(m.slots[j]) })
	t := &task{ID: m.nextID, Agent: agent, Node: node, Command: command, Target: target, Created: now, Fate: fate}
	m.nextID++
	if refuse && m.slots[0].After(now) {
		t.Start, t.Fate = now, "refused"
	} else {
		t.Start = now
		if m.slots[0].After(now) {
			t.Start = m.slots[0]
		}
		if t.Fate != "nowpk-file" {
			m.slots[0] = t.Start.Add(tm.Send)
		}
	}
	m.tasks[agent] = t
	m.all = append(m.all, t)
	return t
}

// faultFate picks what the active upgrade faults do to the task about to be created: the first of
// every ten tasks is the victim.
func faultFate(fc faults.Checker, id int) string {
	if id%10 != 1 {
		return ""
	}
	switch {
	case fc.Active(faults.UpgradeAgentDrops):
		return "drop"
	case fc.Active(faults.UpgradeTimeoutUpgraded):
		return "timeout"
	case fc.Active(faults.UpgradeStuckUpdating):
		return "stuck"
	}
	return ""
}

// settle writes to the agents database what the tasks did to their agents by now: an agent restarting
// is disconnected, one that came back is active with the target version, one that dropped stays
// disconnected.
func (s *APIServer) settleUpgrades() {
	m := s.upgrades
	m.mu.Lock()
	idle := len(m.all) == 0
	m.mu.Unlock()
	if idle {
		return
	}
	now := s.o.Now()
	conf, _ := s.loadConfig()
	tm := timingOf(conf)
	type change struct {
		t     *task
		state int
	}
	var changes []change
	m.mu.Lock()
	keep := m.all[:0]
	for _, t := range m.all {
		sent := t.Start.Add(tm.Send)
		done := sent.Add(tm.Restart)
		state := t.settled
		switch {
		case t.Fate == "refused" || t.Fate == "nowpk-file":
			state = 2
		case !now.Before(done) && t.Fate != "drop":
			state = 2
		case !now.Before(sent):
			state = 1
			if t.Fate == "drop" {
				state = 2
			}
		}
		if state > t.settled {
			changes = append(changes, change{t, state})
		}
		if state < 2 {
			keep = append(keep, t)
		}
	}
	m.all = keep
	m.mu.Unlock()
	if len(changes) == 0 {
		return
	}
	err := s.agents.Update(func(agents []*Agent) ([]*Agent, bool, error) {
		byID := indexAgents(agents)
		for _, c := range changes {
			a := byID[c.t.Agent]
			if a == nil {
				continue
			}
			sent := c.t.Start.Add(tm.Send)
			switch {
			case c.t.Fate == "refused" || c.t.Fate == "nowpk-file":
			case c.t.Fate == "drop":
				a.Conn, a.LastKeepAlive = StatusDisconnected, sent.Unix()
			case c.state == 1:
				a.Conn, a.LastKeepAlive = StatusDisconnected, sent.Unix()
			default:
				a.Conn, a.Version, a.LastKeepAlive = StatusActive, c.t.Target, c.t.Start.Add(tm.Send+tm.Restart).Unix()
			}
		}
		return agents, true, nil
	})
	if err != nil {
		s.o.Logger.Error("upgrade: write the agents", "err", err)
		return
	}
	m.mu.Lock()
	for _, c := range changes {
		c.t.settled = c.state
	}
	m.mu.Unlock()
}

// customFileExists resolves an upgrade_custom file_path under the manager's install directory.
func (s *APIServer) customFileExists(p string) bool {
	rel := strings.TrimPrefix(filepath.Clean("/"+p), "/var/ossec")
	_, err := os.Stat(s.o.Home.Path(filepath.Clean("/" + rel)))
	return err == nil
}

// versionTag is "Wazuh v4.9.0" for "4.9.0" or "v4.9.0".
func versionTag(v string) string {
	return "Wazuh v" + strings.TrimPrefix(strings.TrimPrefix(v, "Wazuh "), "v")
}

func fmtTask(t time.Time) string { return t.UTC().Format(agentTimeFormat) }

// taskItem is one upgrade_result item in the real API's key order.
func taskItem(t *task, st string, upd time.Time, msg string) orderedObject {
	o := orderedObject{{"message", "Success"}, {"agent", fmt.Sprintf("%03d", t.Agent)}, {"task_id", t.ID}, {"node", t.Node},
		{"module", "upgrade_module"}, {"command", t.Command}, {"status", st}}
	if msg != "" {
		o = append(o, kvAny{"error_msg", msg})
	}
	return append(o, kvAny{"create_time", fmtTask(t.Created)}, kvAny{"update_time", fmtTask(upd)})
}
