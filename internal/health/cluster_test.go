package health

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/process"
)

// clusterManager is a manager API (managertest) that answers the cluster endpoints with the bodies of
// testdata/cluster (shaped as the real master.py get_health and the Tavern test_cluster_endpoints
// stages), mut editing the healthcheck body; status is GET /cluster/status's enabled/running.
func clusterManager(t *testing.T, enabled string, mut func(string) string, hc func(w http.ResponseWriter)) *manager.Client {
	t.Helper()
	s := managertest.New(t, managertest.Config{})
	s.SetDaemon("wazuh-clusterd", "running") // a cluster node runs it
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "cluster", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	body := read("manager_healthcheck.json")
	if mut != nil {
		body = mut(body)
	}
	s.Handle("GET /cluster/status", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"data": {"enabled": "` + enabled + `", "running": "` + enabled + `"}, "error": 0}`))
	})
	s.Handle("GET /cluster/healthcheck", func(w http.ResponseWriter, r *http.Request) {
		if hc != nil {
			hc(w)
			return
		}
		_, _ = w.Write([]byte(body))
	})
	s.Handle("GET /cluster/ruleset/synchronization", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(read("manager_ruleset.json")))
	})
	c, err := manager.New(manager.Options{URL: s.URL, Username: s.Username(), Password: s.Password()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runManagerCluster(t *testing.T, c *manager.Client, expected []string, installDir string) Result {
	t.Helper()
	cfg := testConfig(t)
	cfg.Manager.Nodes = expected
	cfg.Manager.InstallDir = installDir
	// The healthcheck's last keepalive (09:59:35.77) is 24 s before testNow.
	e := &Env{Now: func() time.Time { return testNow }, Stack: Stack{Config: cfg, Manager: clientset.Of[ManagerAPI](c)}}
	rep := Run(context.Background(), e, []Check{{ID: "manager.cluster", Component: "manager", Run: checkManagerCluster}})
	if len(rep.Results) == 0 {
		return Result{NotApplicable: true}
	}
	return rep.Results[0]
}

func TestManagerCluster(t *testing.T) {
	if testNow.Sub(time.Date(2026, 11, 21, 9, 59, 35, 0, time.UTC)) > time.Minute {
		t.Fatalf("testNow moved (%s): the healthcheck fixture's keepalive must stay fresh", testNow)
	}
	t.Run("healthy", func(t *testing.T) {
		r := runManagerCluster(t, clusterManager(t, "yes", nil, nil), []string{"manager-1", "manager-2"}, "")
		if r.Status != OK || len(r.Evidence) != 2 || !strings.HasPrefix(r.Evidence[1], "manager-2: worker 4.9.0, 127.0.0.22, 3 active agent(s), last keepalive") ||
			r.Metrics["active_agents"] != 7 {
			t.Fatalf("%s %s %v %v", r.Status, r.Summary, r.Evidence, r.Metrics)
		}
		// The master counts its database by node_name: each node's own agents, adding up to the
		// cluster's (4 on manager-1, 3 on manager-2), said in the summary and per node.
		if !strings.HasSuffix(r.Summary, ", 7 active agent(s)") || r.Metrics["active_agents.manager-1"] != 4 || r.Metrics["active_agents.manager-2"] != 3 ||
			!strings.HasPrefix(r.Evidence[0], "manager-1: master 4.9.0, 127.0.0.21, 4 active agent(s)") {
			t.Fatalf("active agents: %q %v %v", r.Summary, r.Evidence, r.Metrics)
		}
	})
	t.Run("single manager stays out of the report", func(t *testing.T) {
		if r := runManagerCluster(t, clusterManager(t, "no", nil, nil), nil, ""); !r.NotApplicable {
			t.Fatalf("a disabled cluster reported: %+v", r)
		}
	})
	t.Run("worker not connected is named", func(t *testing.T) {
		onlyMaster := func(s string) string {
			i := strings.Index(s, `, {"info": {"name": "manager-2"`)
			j := strings.Index(s, `], "total_affected_items"`)
			return strings.Replace(s[:i]+s[j:], `"total_affected_items": 2`, `"total_affected_items": 1`, 1)
		}
		r := runManagerCluster(t, clusterManager(t, "yes", onlyMaster, nil), []string{"manager-1", "manager-2"}, "")
		if r.Status != Crit || !strings.HasPrefix(r.Summary, "manager-2 not connected to the master (1/2 nodes connected)") ||
			!strings.Contains(r.Fix, "on manager-2:") {
			t.Fatalf("%s %q fix %q", r.Status, r.Summary, r.Fix)
		}
	})
	t.Run("stale keepalive and other version", func(t *testing.T) {
		stale := func(s string) string {
			s = strings.Replace(s, `"last_keep_alive": "2026-11-21T09:59:35.772150Z"`, `"last_keep_alive": "2026-11-21T09:55:54.000000Z"`, 1)
			return strings.Replace(s, `"type": "worker", "version": "4.9.0"`, `"type": "worker", "version": "4.9.1"`, 1)
		}
		r := runManagerCluster(t, clusterManager(t, "yes", stale, nil), nil, "")
		if r.Status != Crit || !strings.Contains(r.Summary, "manager-2: last keepalive 4m6s ago (> 2m0s)") ||
			!strings.Contains(r.Summary, "manager-2 on 4.9.1, master manager-1 on 4.9.0") {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
	})
	t.Run("worker refused with 3031 reads its cluster.log", func(t *testing.T) {
		dir := t.TempDir()
		_ = os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
		line := "2026/11/21 09:59:52 ERROR: [Worker manager-2] [Main] Could not connect to master: Error 3031 - Worker and master versions are not the same."
		if err := os.WriteFile(filepath.Join(dir, "logs", "cluster.log"), []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		refused := func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
			w.WriteHeader(500)
			_, _ = w.Write([]byte(`{"title": "Wazuh Internal Error", "detail": "Worker node is not connected to master", "error": 3023}`))
		}
		mc := clusterManager(t, "yes", nil, refused)
		r := runManagerCluster(t, mc, nil, dir)
		if r.Status != Crit || !strings.Contains(r.Summary, "versions differ (3031)") || len(r.Evidence) != 1 || r.Evidence[0] != "cluster.log: "+line {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Evidence)
		}
		if !strings.Contains(r.Fix, "siemctl health --cluster on the master names its version") {
			t.Errorf("without the installed version, the fix says where to read both: %q", r.Fix)
		}
		// With the package manager, the fix names this worker's version and the command that puts
		// the newer on the older node, the manager package alone.
		dpkg := process.RunnerFunc(func(_ context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
			if name == "dpkg-query" && slices.Contains(args, "siem-manager") {
				return []byte("siem-manager\tinstall ok installed\t4.10.0-1\n"), nil, 0, nil
			}
			return nil, nil, 1, nil
		})
		pm, err := packages.New("apt", dpkg)
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(t)
		cfg.Manager.InstallDir = dir
		e := &Env{Now: func() time.Time { return testNow }, Stack: Stack{Config: cfg, Manager: clientset.Of[ManagerAPI](mc), Packages: clientset.Of[packages.Querier](pm)}}
		r = Run(context.Background(), e, []Check{{ID: "manager.cluster", Component: "manager", Run: checkManagerCluster}}).Results[0]
		for _, want := range []string{"this worker runs siem-manager 4.10.0-1", "if the master is older, on the master: apt-get install -y -q siem-manager=4.10.0-1, then siemctl services restart manager",
			"if this worker is older, here: apt-get install -y -q siem-manager=<the master's package version>"} {
			if !strings.Contains(r.Fix, want) {
				t.Errorf("fix lacks %q:\n%s", want, r.Fix)
			}
		}
	})
}
