package manager

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// apiDaemons is the order of GET /manager/status (framework get_manager_status).
var apiDaemons = []string{"wazuh-agentlessd", "wazuh-analysisd", "wazuh-authd", "wazuh-csyslogd", "wazuh-dbd",
	"wazuh-monitord", "wazuh-execd", "wazuh-integratord", "wazuh-logcollector", "wazuh-maild", "wazuh-remoted",
	"wazuh-reportd", "wazuh-syscheckd", "wazuh-clusterd", "wazuh-modulesd", "wazuh-db", "wazuh-apid"}

// controlDaemons is the order of `wazuh-control status` (SDAEMONS + DAEMONS in wazuh-server.sh).
var controlDaemons = []string{"wazuh-clusterd", "wazuh-modulesd", "wazuh-monitord", "wazuh-logcollector",
	"wazuh-remoted", "wazuh-syscheckd", "wazuh-analysisd", "wazuh-maild", "wazuh-execd", "wazuh-db",
	"wazuh-authd", "wazuh-agentlessd", "wazuh-integratord", "wazuh-dbd", "wazuh-csyslogd", "wazuh-apid"}

// basicDaemons are checked before serving API requests (dapi check_wazuh_status).
var basicDaemons = []string{"wazuh-modulesd", "wazuh-analysisd", "wazuh-execd", "wazuh-db", "wazuh-remoted"}

// runningDaemons are the daemons a default standalone manager runs (the emulator's one process plays all).
func runningDaemons(conf *Config) []string {
	out := []string{"wazuh-modulesd", "wazuh-monitord", "wazuh-logcollector", "wazuh-remoted", "wazuh-syscheckd",
		"wazuh-analysisd", "wazuh-execd", "wazuh-db"}
	if conf == nil || !conf.AuthDisabled {
		out = append(out, "wazuh-authd")
	}
	if conf != nil && !conf.ClusterDisabled {
		out = append([]string{"wazuh-clusterd"}, out...)
	}
	return append(out, "wazuh-apid")
}

// pidfile returns the pid recorded in var/run/<daemon>-<pid>.pid (0 when none) and the file path.
func pidfile(h Home, daemon string) (int, string) {
	matches, _ := filepath.Glob(filepath.Join(h.RunDir(), daemon+"-*.pid"))
	for _, m := range matches {
		s := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), daemon+"-"), ".pid")
		if pid, err := strconv.Atoi(s); err == nil && pid > 0 {
			return pid, m
		}
	}
	return 0, ""
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// DaemonStates returns each daemon's state as GET /manager/status computes it.
func DaemonStates(h Home) map[string]string {
	out := make(map[string]string, len(apiDaemons))
	restarting := exists(filepath.Join(h.RunDir(), ".restart"))
	for _, d := range apiDaemons {
		switch {
		case exists(filepath.Join(h.RunDir(), d+".failed")):
			out[d] = "failed"
		case restarting:
			out[d] = "restarting"
		case exists(filepath.Join(h.RunDir(), d+".start")):
			out[d] = "starting"
		default:
			pid, _ := pidfile(h, d)
			switch {
			case pid == 0:
				out[d] = "stopped"
			case processAlive(pid):
				out[d] = "running"
			default:
				out[d] = "failed"
			}
		}
	}
	return out
}

// writePidfiles records this process as every running daemon and clears failure markers.
func writePidfiles(h Home, daemons []string, pid int) error {
	if err := os.MkdirAll(h.RunDir(), 0o750); err != nil {
		return fmt.Errorf("run dir: %w", err)
	}
	for _, d := range apiDaemons {
		_ = os.Remove(filepath.Join(h.RunDir(), d+".failed"))
		if _, old := pidfile(h, d); old != "" {
			_ = os.Remove(old)
		}
	}
	for _, d := range daemons {
		p := filepath.Join(h.RunDir(), fmt.Sprintf("%s-%d.pid", d, pid))
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)+"\n"), 0o640); err != nil {
			return fmt.Errorf("pidfile: %w", err)
		}
	}
	return nil
}

// removePidfiles removes the pidfiles that name pid.
func removePidfiles(h Home, pid int) {
	matches, _ := filepath.Glob(filepath.Join(h.RunDir(), fmt.Sprintf("*-%d.pid", pid)))
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

// markFailed touches var/run/<daemon>.failed (what wazuh-control does on a configuration error).
func markFailed(h Home, daemon string) {
	if err := os.MkdirAll(h.RunDir(), 0o750); err == nil {
		_ = os.WriteFile(filepath.Join(h.RunDir(), daemon+".failed"), nil, 0o640)
	}
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
