package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// FaultKind describes one fault the lab can inject.
type FaultKind struct {
	Name        string
	Description string
	Emulators   bool // needs the emulators
}

// FaultKinds lists the faults (unit-stopped and unit-flapping take ":<unit>").
func FaultKinds() []FaultKind {
	return append([]FaultKind{
		{"unit-stopped:<unit>", "stop a unit (indexer, manager, dashboard or shipper: siem-indexer … shipper, wazuh-indexer … filebeat); heal starts it", false},
		{"process-killed", "SIGKILL the manager's main PID; heal starts the unit again", true},
		{"manager-config-broken", "break ossec.conf syntax and restart the manager (start fails, wazuh-analysisd -t and siem-control check report it); heal restores it", true},
		{"analysisd-failed", "wazuh-analysisd failed while the rest of the manager runs (its pidfile gone, var/run/wazuh-analysisd.failed: the API answers 1017, wazuh-control status says not running, events are lost); heal restarts the manager", true},
		{"allocation-primaries", "persistent cluster.routing.allocation.enable=primaries left on (real OpenSearch setting); heal resets it", false},
		{"watermark-override", "transient disk watermarks 95%/95%/98% (low/high/flood stage) left on (real OpenSearch settings); heal resets them", false},
		{"cluster-red", "index siem-lab-red whose primary requires a missing node (cluster red); heal deletes it", false},
		{"agents-disconnected", "all agents report disconnected (emulator fault)", true},
		{"agent-newer", "one agent reports a version newer than the manager (emulator fault)", true},
		{"api-slow", "every manager API call is delayed 3s (emulator fault)", true},
		{"api-ratelimit", "every manager API call answers 429 / code 6001 (emulator fault)", true},
		{"shipper-stalled", "SIGSTOP the shipper's (Filebeat's) main PID: the unit stays active, nothing ships; heal sends SIGCONT", true},
		{"shipper-output-unreachable", "point Filebeat's output at a closed port and restart it (test output fails at dial up); heal restores filebeat.yml and restarts it", true},
		{"alerts-stopped", "the manager's analysisd drops every event: no alert is written, nothing new reaches the indexer (emulator fault)", true},
		{"agents-no-reconnect", "once the manager restarts, every tenth active agent (at least one) stays disconnected; the API shows it (emulator fault)", true},
		{"unit-flapping:<unit>", "the unit restarts every few seconds (drop-in RuntimeMaxSec=4s, Restart=always: systemd counts NRestarts); heal removes the drop-in and starts it", false},
		{"indexer-cert-expired", "replace the indexer's node certificate with one for the same key signed by the lab CA that expired 30 days ago, and restart the indexer; heal puts the original back and restarts it", false},
		{"indexer-cert-foreign", "replace the indexer's node certificate with one for the same key signed by a foreign CA (not the one the indexer, shipper, dashboard and siemctl trust), and restart the indexer; heal puts the original back and restarts it", false},
		{"key-mismatch", "replace the indexer's node key with a fresh one its certificate was not issued for, and restart the indexer (it cannot load the pair); heal puts the original key and certificate back and restarts it", false},
		{"dashboard-indexer-unreachable", "point the dashboard's opensearch.hosts at a closed port and restart it (it answers 503 \"server is not ready yet\" on every route); heal restores its config and restarts it", true},
		{"upgrade-no-wpk", "the WPK repository has no package for the agents' platforms: every agent upgrade is refused 1819 (emulator fault)", true},
		{"upgrade-no-wpk:<platform>", "no WPK for these platforms only (PLATFORM[/ARCH],…: os.platform or os.name, os.arch; e.g. windows, ubuntu/aarch64): their agents' upgrades are refused 1819, the others' go on (emulator fault)", true},
		{"upgrade-agent-drops", "the first of every ten agent upgrade tasks: the agent drops mid-upgrade and never comes back (Updating, then Timeout) (emulator fault)", true},
		{"upgrade-timeout-upgraded", "the first of every ten agent upgrade tasks reports Timeout though the agent upgraded (wazuh#25086) (emulator fault)", true},
		{"upgrade-stuck-updating", "the first of every ten agent upgrade tasks stays Updating though the agent upgraded (wazuh#24296) (emulator fault)", true},
		{"upgrade-bulk-refused", "the manager refuses the WPK sends beyond its max_threads: those tasks end Error \"Send lock restart error\" (wazuh#27754) (emulator fault)", true},
		{"default-password", "manager API user back to its default password (siem/siem, wazuh/wazuh) on the server and in the secrets; heal restores the generated one", true},
	}, startFaultKinds()...)
}

// ErrUnknownFault is returned for a fault kind the lab does not know.
var ErrUnknownFault = errors.New("unknown fault kind")

const redIndex = "siem-lab-red"

func (l *Lab) faultKind(kind string) (FaultKind, string, error) {
	name, arg, _ := strings.Cut(kind, ":")
	for _, k := range FaultKinds() {
		base, _, hasArg := strings.Cut(k.Name, ":")
		if base != name || hasArg != (arg != "") {
			continue
		}
		if k.Emulators && l.emu == nil {
			return k, "", fmt.Errorf("fault %s needs the emulators", kind)
		}
		if hasArg && name == "upgrade-no-wpk" {
			return k, arg, nil // platforms, read by the emulator
		}
		if hasArg {
			unit := arg
			if !strings.HasSuffix(unit, ".service") {
				unit += ".service"
			}
			if !slices.Contains(l.st.Units, unit) {
				return k, "", fmt.Errorf("fault %s: unit %s is not one of %s", kind, unit, strings.Join(l.st.Units, ", "))
			}
			arg = unit
		}
		return k, arg, nil
	}
	return FaultKind{}, "", fmt.Errorf("%w %q (siemlab fault --list)", ErrUnknownFault, kind)
}

// Fault injects a fault into the running lab and records it in lab.json.
func (l *Lab) Fault(ctx context.Context, kind string) error { return l.setFault(ctx, kind, true) }

// Heal removes a fault and waits until the affected component is healthy again.
func (l *Lab) Heal(ctx context.Context, kind string) error { return l.setFault(ctx, kind, false) }

// setFault injects (on) or heals a fault and records the lab's faults in lab.json.
func (l *Lab) setFault(ctx context.Context, kind string, on bool) error {
	k, arg, err := l.faultKind(kind)
	if err != nil {
		return err
	}
	base, _, _ := strings.Cut(k.Name, ":")
	return recordFault(l.st, kind, on, l.fault(ctx, base, arg, on))
}

// recordFault adds (on) or removes kind in the lab's faults and writes lab.json, once err, the
// fault's or the heal's outcome, is nil; otherwise it returns err naming the fault.
func recordFault(st *State, kind string, on bool, err error) error {
	if err != nil {
		verb := "heal"
		if on {
			verb = "fault"
		}
		return fmt.Errorf("%s %s: %w", verb, kind, err)
	}
	if !on {
		st.Faults = slices.DeleteFunc(st.Faults, func(f string) bool { return f == kind })
	} else if !slices.Contains(st.Faults, kind) {
		st.Faults = append(st.Faults, kind)
	}
	return writeState(st)
}

func (l *Lab) fault(ctx context.Context, kind, arg string, on bool) error {
	switch kind {
	case "unit-stopped":
		if on {
			return l.stopUnit(ctx, arg)
		}
		return l.startAndWait(ctx, arg)
	case "process-killed":
		if on {
			return l.killManager(ctx)
		}
		return l.startAndWait(ctx, l.prof.ManagerUnit())
	case "manager-config-broken":
		return l.managerConfig(ctx, on)
	case "allocation-primaries":
		var v any
		if on {
			v = "primaries"
		}
		return l.clusterSettings(ctx, "persistent", map[string]any{"cluster.routing.allocation.enable": v})
	case "watermark-override":
		// The temporary recovery override (what `siemctl indexer
		// watermark --recover` sets): low and high 95%, flood stage 98%.
		// OpenSearch rejects a high watermark above the flood stage, so all
		// three are set (and reset) together.
		const wm = "cluster.routing.allocation.disk.watermark."
		s := map[string]any{wm + "low": nil, wm + "high": nil, wm + "flood_stage": nil}
		if on {
			s = map[string]any{wm + "low": "95%", wm + "high": "95%", wm + "flood_stage": "98%"}
		}
		return l.clusterSettings(ctx, "transient", s)
	case "cluster-red":
		return l.clusterRed(ctx, on)
	case "shipper-stalled":
		return l.shipperStalled(ctx, on)
	case "shipper-output-unreachable":
		return l.shipperOutput(ctx, on)
	case "unit-flapping":
		return l.unitFlapping(ctx, arg, on)
	case "agents-disconnected", "agent-newer", "api-slow", "api-ratelimit", "alerts-stopped", "agents-no-reconnect",
		"upgrade-no-wpk", "upgrade-agent-drops", "upgrade-timeout-upgraded", "upgrade-stuck-updating", "upgrade-bulk-refused":
		if arg != "" {
			kind += ":" + arg // the marker carries it
		}
		return l.emu.SetFault(l.st.Root, kind, on)
	case "default-password":
		return l.defaultPassword(ctx, on)
	case "indexer-cert-expired", "indexer-cert-foreign":
		return l.indexerCertFault(ctx, kind, on)
	case "key-mismatch":
		return l.keyMismatch(ctx, on)
	case "dashboard-indexer-unreachable":
		return l.dashboardUnreachable(ctx, on)
	case "analysisd-failed":
		return l.analysisdFailed(ctx, on)
	}
	if isStartFault(kind) {
		return l.startFault(ctx, kind, on)
	}
	return fmt.Errorf("%w %q", ErrUnknownFault, kind)
}

// startAndWait starts a unit and waits for its component to answer.
func (l *Lab) startAndWait(ctx context.Context, unit string) error {
	switch unit {
	case l.prof.IndexerUnit():
		return l.startIndexer(ctx)
	case l.prof.ManagerUnit():
		return l.startManager(ctx)
	case l.prof.DashboardUnit():
		return l.startDashboard(ctx)
	default:
		return l.startUnit(ctx, unit)
	}
}

// killManager SIGKILLs the manager's main PID and returns once systemd has seen it die (the unit
// no longer active with that PID), so the fault is in place when it returns and a heal right after
// starts a dead unit instead of finding it still active.
func (l *Lab) killManager(ctx context.Context) error {
	unit := l.prof.ManagerUnit()
	pid, err := l.signalMain(ctx, unit, syscall.SIGKILL)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.tmo)
	defer cancel()
	var st UnitState
	err = poll(ctx, l.poll, func() (bool, error) {
		var err error
		st, err = l.unitState(ctx, unit)
		return err == nil && (st.MainPID != pid || st.ActiveState != "active"), err
	})
	if err != nil {
		return fmt.Errorf("%s still %s/%s with main PID %d after SIGKILL: %w", unit, st.ActiveState, st.SubState, pid, err)
	}
	return nil
}

func (l *Lab) unitState(ctx context.Context, unit string) (UnitState, error) {
	var st UnitState
	err := l.withUnits(ctx, func(c unitConn) error {
		var err error
		st, err = UnitStatus(ctx, c, unit)
		return err
	})
	return st, err
}

// signalMain sends sig to a unit's main PID (which must be in the lab's cgroups) and returns it.
func (l *Lab) signalMain(ctx context.Context, unit string, sig syscall.Signal) (int, error) {
	st, err := l.unitState(ctx, unit)
	if err != nil {
		return 0, err
	}
	pid := st.MainPID
	if pid == 0 {
		return 0, fmt.Errorf("%s has no main PID (%s/%s)", unit, st.ActiveState, st.SubState)
	}
	if !l.systemd().pidInLab(st.MainPID) {
		return 0, fmt.Errorf("main PID %d is not in the lab's cgroup", st.MainPID)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return 0, fmt.Errorf("kill -%d %d: %w", sig, pid, err)
	}
	return pid, nil
}

// shipperStalled stops (SIGSTOP) or continues (SIGCONT) the running Filebeat. A heal of a shipper
// that is no longer running (restarted meanwhile) starts its unit.
func (l *Lab) shipperStalled(ctx context.Context, on bool) error {
	unit := l.shipperLayout().Unit()
	if on {
		_, err := l.signalMain(ctx, unit, syscall.SIGSTOP)
		return err
	}
	if _, err := l.signalMain(ctx, unit, syscall.SIGCONT); err != nil {
		l.log.Debug("shipper not running at heal, starting it", "err", err)
		return l.startUnit(ctx, unit)
	}
	return nil
}

// unreachableOutput is a loopback port nothing listens on (TCP port 1, tcpmux).
const unreachableOutput = "127.0.0.1:1"

// shipperOutput points filebeat.yml's output hosts at a closed port (or restores the saved file)
// and restarts the shipper, so both the running Filebeat and `test output` see it.
func (l *Lab) shipperOutput(ctx context.Context, broken bool) error {
	sh := l.shipperLayout()
	conf := filepath.Join(l.st.Root, sh.ConfigFile())
	if broken {
		want := fmt.Sprintf(`hosts: ["127.0.0.1:%d"]`, l.st.Ports.Indexer)
		err := l.breakConfig(conf, 0o600, func(orig []byte) ([]byte, error) {
			if !bytes.Contains(orig, []byte(want)) {
				return nil, fmt.Errorf("%s has no %s to break", conf, want)
			}
			return bytes.Replace(orig, []byte(want), []byte(`hosts: ["`+unreachableOutput+`"]`), 1), nil
		})
		if err != nil {
			return err
		}
	} else if err := l.restoreConfig(conf, 0o600); err != nil {
		return err
	}
	if err := l.stopUnit(ctx, sh.Unit()); err != nil {
		return err
	}
	return l.startUnit(ctx, sh.Unit())
}

// managerConfig leaves ossec.conf with an unclosed element and restarts the manager, which then
// fails to start (or restores the saved file and starts it).
func (l *Lab) managerConfig(ctx context.Context, broken bool) error {
	conf := filepath.Join(l.managerDir(), "etc/ossec.conf")
	if !broken {
		if err := l.restoreConfig(conf, 0o640); err != nil {
			return err
		}
		return l.startManager(ctx)
	}
	err := l.breakConfig(conf, 0o640, func(orig []byte) ([]byte, error) {
		// An unclosed element near the end: a syntax error every XML parser reports.
		i := bytes.LastIndex(orig, []byte("</ossec_config>"))
		if i < 0 {
			i = len(orig)
		}
		return append(append([]byte{}, orig[:i]...), []byte("  <global>\n    <jsonout_output>yes\n  <!-- broken by siemlab fault manager-config-broken -->\n</ossec_config>\n")...), nil
	})
	if err != nil {
		return err
	}
	_ = l.stopUnit(ctx, l.prof.ManagerUnit())
	_ = l.startUnit(ctx, l.prof.ManagerUnit()) // fails or exits at once: that is the fault
	return nil
}

// savedConfig is where a config fault keeps the original of conf.
func (l *Lab) savedConfig(conf string) string {
	return filepath.Join(l.st.Dir, "faults", filepath.Base(conf)+".orig")
}

// breakConfig keeps the original of conf for restoreConfig (a second fault keeps the first
// original) and writes what breakIt makes of it in its place.
func (l *Lab) breakConfig(conf string, mode os.FileMode, breakIt func(orig []byte) ([]byte, error)) error {
	name, saved := filepath.Base(conf), l.savedConfig(conf)
	orig, err := os.ReadFile(conf)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if _, err := os.Stat(saved); err != nil {
		if err := writeFile(saved, orig, mode); err != nil {
			return err
		}
	}
	bad, err := breakIt(orig)
	if err != nil {
		return err
	}
	return writeFile(conf, bad, mode)
}

// restoreConfig puts back the original breakConfig kept.
func (l *Lab) restoreConfig(conf string, mode os.FileMode) error {
	name, saved := filepath.Base(conf), l.savedConfig(conf)
	orig, err := os.ReadFile(saved)
	if err != nil {
		return fmt.Errorf("no saved %s to restore: %w", name, err)
	}
	if err := writeFile(conf, orig, mode); err != nil {
		return err
	}
	if err := os.Remove(saved); err != nil {
		return fmt.Errorf("remove saved %s: %w", name, err)
	}
	return nil
}

func (l *Lab) clusterSettings(ctx context.Context, scope string, s map[string]any) error {
	c, err := l.indexer()
	if err != nil {
		return err
	}
	_, err = c.ok(ctx, http.MethodPut, "/_cluster/settings", map[string]any{scope: s})
	return err
}

func (l *Lab) clusterRed(ctx context.Context, on bool) error {
	c, err := l.indexer()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.tmo)
	defer cancel()
	if on {
		body := map[string]any{"settings": map[string]any{"index.number_of_shards": 1, "index.number_of_replicas": 0,
			"index.routing.allocation.require._name": "siem-lab-missing-node"}}
		if err := c.createIndex(ctx, redIndex, "wait_for_active_shards=0", body); err != nil {
			return err
		}
		return poll(ctx, l.poll, func() (bool, error) {
			h, err := c.health(ctx, "")
			return err == nil && h.Status == "red", nil
		})
	}
	if err := c.deleteIndex(ctx, redIndex); err != nil {
		return err
	}
	return l.waitClusterUsable(ctx)
}

func (l *Lab) defaultPassword(ctx context.Context, on bool) error {
	pw := l.prof.APIUser // the default password is the user's name
	if !on {
		var err error
		if pw, err = l.readSecret(secretManagerLab); err != nil {
			return err
		}
	}
	if err := l.stopUnit(ctx, l.prof.ManagerUnit()); err != nil {
		return err
	}
	if err := l.emu.SetAPIUserPassword(l.managerDir(), l.prof.APIUser, pw); err != nil {
		return fmt.Errorf("set manager API password: %w", err)
	}
	if err := l.writeSecret(secretManager, pw); err != nil {
		return err
	}
	return l.startManager(ctx)
}

// flappingDropIn makes a unit end after 4 s of running and systemd start it
// again a second later: a unit that restarts repeatedly, as NRestarts and
// ActiveEnterTimestamp show it.
const flappingDropIn = "[Service]\nRuntimeMaxSec=4\nRestart=always\nRestartSec=1\n"

func (l *Lab) flappingDropInPath(unit string) string {
	return filepath.Join(l.st.Root, "etc/systemd/system", unit+".d", "siemlab-flapping.conf")
}

// unitFlapping puts the flapping drop-in on a unit and restarts it, or
// removes it and starts the unit steady again.
func (l *Lab) unitFlapping(ctx context.Context, unit string, on bool) error {
	p := l.flappingDropInPath(unit)
	if on {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(flappingDropIn), 0o644); err != nil {
			return err
		}
	} else if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := l.withUnits(ctx, func(c unitConn) error { return c.ReloadContext(ctx) }); err != nil {
		return fmt.Errorf("daemon-reload: %w", err)
	}
	if err := l.stopUnit(ctx, unit); err != nil {
		return err
	}
	if err := l.withUnits(ctx, func(c unitConn) error { return c.ResetFailedUnitContext(ctx, unit) }); err != nil {
		l.log.Debug("reset-failed", "unit", unit, "err", err)
	}
	if on {
		return l.startUnit(ctx, unit)
	}
	return l.startAndWait(ctx, unit)
}

// analysisdFailed makes wazuh-analysisd a failed daemon while the rest of the manager runs, as after
// a crash: its pidfile gone and var/run/wazuh-analysisd.failed present (what /manager/status and
// wazuh-control status read; the manager reads no events then). Heal restarts the manager, which
// brings analysisd back.
func (l *Lab) analysisdFailed(ctx context.Context, on bool) error {
	run := filepath.Join(l.managerDir(), "var/run")
	if !on {
		if err := os.Remove(filepath.Join(run, "wazuh-analysisd.failed")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("clear analysisd failure: %w", err)
		}
		if err := l.stopUnit(ctx, l.prof.ManagerUnit()); err != nil {
			return err
		}
		return l.startManager(ctx)
	}
	pids, err := filepath.Glob(filepath.Join(run, "wazuh-analysisd-*.pid"))
	if err != nil {
		return err
	}
	for _, p := range pids {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	return writeFile(filepath.Join(run, "wazuh-analysisd.failed"), nil, 0o640)
}
