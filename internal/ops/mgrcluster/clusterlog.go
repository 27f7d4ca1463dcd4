package mgrcluster

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LastConnectError is the last "Could not connect to master" line of the manager's
// logs/cluster.log under installDir ("" when none, or no such file). A worker the master refuses
// logs "Could not connect to master: Error 3031 - Worker and master versions are not the same."
// and tries again every 10 s (framework/wazuh/core/cluster/client.py, master.py hello()).
func LastConnectError(installDir string) string {
	if installDir == "" {
		return ""
	}
	f, err := os.Open(filepath.Join(installDir, "logs", "cluster.log"))
	if err != nil {
		return ""
	}
	defer f.Close()
	last := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Could not connect to master") {
			last = sc.Text()
		}
	}
	return last
}

// Refused3031 says whether a cluster.log line is the master's refusal for the version (3031).
func Refused3031(line string) bool { return strings.Contains(line, "3031") }

// ClusterdStarted is when this host's wazuh-clusterd started: the modification time of its pid
// file, var/run/wazuh-clusterd-<pid>.pid, which the daemon writes when it starts (the newest one
// when several are left). ok is false when there is none.
func ClusterdStarted(installDir string) (started time.Time, ok bool) {
	if installDir == "" {
		return time.Time{}, false
	}
	matches, _ := filepath.Glob(filepath.Join(installDir, "var", "run", "wazuh-clusterd-*.pid"))
	for _, m := range matches {
		fi, err := os.Lstat(m)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if fi.ModTime().After(started) {
			started, ok = fi.ModTime(), true
		}
	}
	return started, ok
}
