package steps_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/testenv"
)

// Lines of a real OpenSearch 2.19 log: the node restarted on the new version, and its security
// plugin's first read of its index failing.
const (
	logStarted = "[2026-11-28T15:16:25,806][INFO ][o.o.n.Node               ] [node-1] started"
	logFailure = "[2026-11-28T15:16:26,857][ERROR][o.o.s.c.ConfigurationLoaderSecurity7] [node-1] Failure No shard available for [org.opensearch.action.get.MultiGetShardRequest@3a58fffc] retrieving configuration for [INTERNALUSERS] (index=.opendistro_security)"
)

// After a start on a new version the node holds its security index and the
// plugin loads it by itself within seconds: the security step lets it, and
// runs the tool only after authenticated requests are served. The tool (a JVM)
// started at the first HTTP answer made the plugin's first read miss the
// security shard on a small host, and its retry cost 13 s.
func TestSecurityApplyLetsThePluginLoadFirst(t *testing.T) {
	for _, tt := range []struct {
		name string
		// loadsAfter: the health answers that are 503 before the plugin loads by
		// itself; -1: it never does (no security index), the tool initialises it.
		loadsAfter int
		wantLoaded bool
		minNotInit int
		maxNotInit int // 0: no bound
		log        []string
	}{
		{"the plugin loads by itself", 3, true, 3, 0, []string{logStarted}},
		{"the plugin cannot load alone", -1, false, 10, 0, nil},
		// Its first read lost the race with its shard's recovery (the node's log says so): its
		// retry would come 13 s later, the tool runs at once.
		{"the plugin's first read failed", -1, false, 1, 2, []string{logStarted, logFailure}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRepo{registered: true}
			d, srv := snapshotDeps(t, "snapshot", f)
			d.Poll = 5 * time.Millisecond
			if tt.log != nil {
				etc, logs := d.Config.Indexer.ConfigDir, filepath.Join(t.TempDir(), "logs")
				testenv.WriteFile(t, filepath.Join(etc, "opensearch.yml"), "cluster.name: siem-cluster\npath.logs: "+logs+"\n", 0o644)
				testenv.WriteFile(t, filepath.Join(logs, "siem-cluster.log"), strings.Join(tt.log, "\n")+"\n", 0o644)
			}
			notInit := 0
			srv.Set("GET /_cluster/health", indexertest.Locked(&f.mu, func(w http.ResponseWriter, _ *http.Request) {
				if !f.secInit && (tt.loadsAfter < 0 || notInit < tt.loadsAfter) {
					notInit++
					w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
					w.WriteHeader(http.StatusServiceUnavailable)
					w.Write(f.notInit)
					return
				}
				f.secInit = true
				w.Write(f.green)
			}))
			tool := &secTool{}
			var loadedBeforeTool bool
			tool.onRun = func() {
				f.mu.Lock()
				loadedBeforeTool = f.secInit
				f.secInit = true
				f.mu.Unlock()
			}
			d.Exec = tool
			out, err := run(t, d, newEnv(d, nil), "indexer.security_apply", nil)
			if err != nil || !strings.Contains(out.Message, "security configuration applied") {
				t.Fatalf("security_apply: %q %v", out.Message, err)
			}
			if len(tool.argv) != 1 {
				t.Fatalf("the tool ran %d times, want once (the upgrade still applies the configuration)", len(tool.argv))
			}
			if loadedBeforeTool != tt.wantLoaded {
				t.Errorf("plugin loaded before the tool ran: %v, want %v", loadedBeforeTool, tt.wantLoaded)
			}
			if tt.maxNotInit > 0 && notInit > tt.maxNotInit {
				t.Errorf("%d not-initialised answers before the tool, want at most %d (the log said the plugin's read failed)", notInit, tt.maxNotInit)
			}
			if notInit < tt.minNotInit {
				t.Errorf("%d not-initialised answers before the tool, want at least %d (the step did not wait for the plugin)", notInit, tt.minNotInit)
			}
		})
	}
}
