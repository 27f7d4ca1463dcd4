package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Lines of a real OpenSearch 2.19 log (the lab's node, restarted on the new version).
const (
	logStopped = "[2026-11-28T15:16:20,152][INFO ][o.o.n.Node               ] [node-1] stopped"
	logStarted = "[2026-11-28T15:16:25,806][INFO ][o.o.n.Node               ] [node-1] started"
	logWillNot = "[2026-11-28T15:16:25,807][INFO ][o.o.s.c.ConfigurationRepository] [node-1] Will not attempt to create index .opendistro_security and default configs if they are absent. Use securityadmin to initialize cluster"
	logFailure = "[2026-11-28T15:16:26,857][ERROR][o.o.s.c.ConfigurationLoaderSecurity7] [node-1] Failure No shard available for [org.opensearch.action.get.MultiGetShardRequest@3a58fffc] retrieving configuration for [INTERNALUSERS] (index=.opendistro_security)"
	logGreen   = "[2026-11-28T15:16:27,134][INFO ][o.o.c.r.a.AllocationService] [node-1] Cluster health status changed from [RED] to [GREEN] (reason: [shards started [[.opendistro_security][0]]])."
	logInit    = "[2026-11-28T15:16:40,312][INFO ][o.o.s.c.ConfigurationRepository] [node-1] Node 'node-1' initialized"
)

func TestSecurityLoadFailed(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"the first read lost the race", []string{logStarted, logWillNot, logFailure, logFailure, logGreen}, logFailure},
		{"loaded at the first read", []string{logStarted, logWillNot, logGreen, strings.Replace(logInit, "15:16:40", "15:16:27", 1)}, ""},
		{"a failure before the last start is an earlier run's", []string{logStarted, logFailure, logInit, logStopped, logStarted, logWillNot}, ""},
		{"the start is not in the log", []string{logFailure, logGreen}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "siem-cluster.log")
			if err := os.WriteFile(f, []byte(strings.Join(tt.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := SecurityLoadFailed(f); err != nil || got != tt.want {
				t.Errorf("SecurityLoadFailed = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := SecurityLoadFailed(filepath.Join(t.TempDir(), "none.log")); !os.IsNotExist(err) {
		t.Errorf("a missing log: %v, want not-exist", err)
	}
}

func TestIndexerLogFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ yml, want string }{
		{"cluster.name: siem-cluster\npath.logs: /var/log/wazuh-indexer\n", "/var/log/wazuh-indexer/siem-cluster.log"},
		{"path:\n  logs: /var/log/opensearch\n", "/var/log/opensearch/opensearch.log"},
		{"cluster.name: c\n", ""},
		{"path.logs: logs\n", ""},
	} {
		if err := os.WriteFile(filepath.Join(dir, "opensearch.yml"), []byte(tt.yml), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := IndexerLogFile(dir); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.yml, got, tt.want)
		}
	}
	if got := IndexerLogFile(filepath.Join(dir, "none")); got != "" {
		t.Errorf("no opensearch.yml: %q", got)
	}
}
