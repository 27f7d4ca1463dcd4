// Package faults stores the lab's run-time faults as marker files that the emulators check per request
// or per loop, so a fault takes effect without restarting anything.
package faults

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Fault kinds honoured by the emulators.
const (
	APISlow            = "api-slow"
	APIRateLimit       = "api-ratelimit"
	AgentsDisconnected = "agents-disconnected"
	AgentNewer         = "agent-newer"
	// AlertsStopped: analysisd drops every event (no alert is written).
	AlertsStopped = "alerts-stopped"
	// AgentsNoReconnect: once the manager (re)starts after the fault was
	// set, a tenth of the active agents (at least one) stay disconnected.
	AgentsNoReconnect = "agents-no-reconnect"
	// ClusterDown: wazuh-clusterd dies on this node (a worker drops its
	// connection to the master and never reconnects until the manager
	// restarts). The daemon consumes the marker.
	ClusterDown = "cluster-down"
	// The agent upgrade module's field failures (the first of every ten upgrade tasks is the victim of
	// the per-agent ones): no WPK in the repository for the agents' platforms (1819), an agent that
	// drops mid-upgrade and never comes back (Updating, then Timeout), a task reported Timeout though
	// the agent upgraded, a task stuck in Updating though the agent upgraded, and a manager refusing the
	// sends beyond its max_threads ("Send lock restart error"). upgrade-no-wpk:PLATFORM[/ARCH][,…] limits
	// the missing WPK to those platforms (os.platform or os.name, and os.arch).
	UpgradeNoWPK           = "upgrade-no-wpk"
	UpgradeAgentDrops      = "upgrade-agent-drops"
	UpgradeTimeoutUpgraded = "upgrade-timeout-upgraded"
	UpgradeStuckUpdating   = "upgrade-stuck-updating"
	UpgradeBulkRefused     = "upgrade-bulk-refused"
)

// Kinds lists every fault kind.
var kinds = []string{APISlow, APIRateLimit, AgentsDisconnected, AgentNewer, AlertsStopped, AgentsNoReconnect, ClusterDown,
	UpgradeNoWPK, UpgradeAgentDrops, UpgradeTimeoutUpgraded, UpgradeStuckUpdating, UpgradeBulkRefused}

// Kinds returns every known fault kind.
func Kinds() []string { return slices.Clone(kinds) }

// EnvDir names the environment variable that overrides the fault directory (set in the lab's units).
const EnvDir = "SIEM_LAB_FAULTS_DIR"

// DirForRoot is the fault directory of a lab root (ROOT/var/lib/siem-lab-faults).
func DirForRoot(root string) string { return filepath.Join(root, "var", "lib", "siem-lab-faults") }

// ErrUnknown is returned for a fault kind the emulators do not know.
var ErrUnknown = errors.New("unknown fault")

// Set switches a fault on (creates its marker file) or off (removes it). kind may carry an argument
// after a colon ("upgrade-no-wpk:windows"), written into the marker for the emulator (Arg).
func Set(dir, kind string, on bool) error {
	kind, arg, _ := strings.Cut(kind, ":")
	if !slices.Contains(kinds, kind) {
		return fmt.Errorf("%w %q (known: %v)", ErrUnknown, kind, kinds)
	}
	p := filepath.Join(dir, kind)
	if !on {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clear fault %s: %w", kind, err)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("set fault %s: %w", kind, err)
	}
	content := time.Now().UTC().Format(time.RFC3339) + "\n"
	if arg != "" {
		content += arg + "\n"
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return fmt.Errorf("set fault %s: %w", kind, err)
	}
	return nil
}

// Checker reports whether faults are active. The zero value (empty Dir) never reports a fault.
type Checker struct{ Dir string }

// Active reports whether the fault is on.
func (c Checker) Active(kind string) bool {
	_, ok := c.Since(kind)
	return ok
}

// Arg is the argument the fault was set with ("" when none, or when the fault is off).
func (c Checker) Arg(kind string) string {
	if c.Dir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, kind))
	if err != nil {
		return ""
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	arg, _, _ := strings.Cut(rest, "\n")
	return strings.TrimSpace(arg)
}

// Since reports whether the fault is on and since when (the marker's modification time).
func (c Checker) Since(kind string) (time.Time, bool) {
	if c.Dir == "" {
		return time.Time{}, false
	}
	st, err := os.Stat(filepath.Join(c.Dir, kind))
	if err != nil {
		return time.Time{}, false
	}
	return st.ModTime(), true
}
