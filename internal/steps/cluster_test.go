package steps_test

import (
	"context"
	"github.com/siemctl/siemctl/internal/units"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
)

// Bodies as a 3-node OpenSearch cluster answers mid-roll: indexer-1 already on 2.19.3, the
// others on 2.11.1; one replica unassigned because its primary sits on the newer node.
const (
	rollNodes = `{"nodes":{
  "aW1":{"name":"indexer-1","version":"2.19.3","roles":["cluster_manager","data","ingest"]},
  "bX2":{"name":"indexer-2","version":"2.11.1","roles":["cluster_manager","data","ingest"]},
  "cY3":{"name":"indexer-3","version":"2.11.1","roles":["cluster_manager","data","ingest"]}}}`
	rollYellow = `{"cluster_name":"siem-cluster","status":"yellow","timed_out":false,"number_of_nodes":3,"number_of_data_nodes":3,
  "active_primary_shards":6,"active_shards":11,"relocating_shards":0,"initializing_shards":0,"unassigned_shards":1,"delayed_unassigned_shards":0}`
	rollShards = `[
  {"index":"siem-alerts-4.x-2026.11.28","shard":"0","prirep":"p","state":"STARTED","unassigned.reason":null,"node":"indexer-1"},
  {"index":"siem-alerts-4.x-2026.11.28","shard":"0","prirep":"r","state":"UNASSIGNED","unassigned.reason":"NODE_LEFT","node":null}]`
	explainNodeVersion = `{"index":"siem-alerts-4.x-2026.11.28","shard":0,"primary":false,"current_state":"unassigned",
  "can_allocate":"no","allocate_explanation":"cannot allocate because allocation is not permitted to any of the nodes",
  "node_allocation_decisions":[
    {"node_name":"indexer-1","node_decision":"no","deciders":[{"decider":"same_shard","decision":"NO","explanation":"a copy of this shard is already allocated to this node"}]},
    {"node_name":"indexer-2","node_decision":"no","deciders":[{"decider":"node_version","decision":"NO","explanation":"cannot allocate replica shard to a node with version [2.11.1] since this is older than the primary version [2.19.3]"}]},
    {"node_name":"indexer-3","node_decision":"no","deciders":[{"decider":"node_version","decision":"NO","explanation":"cannot allocate replica shard to a node with version [2.11.1] since this is older than the primary version [2.19.3]"}]}]}`
	explainDisk = `{"index":"siem-alerts-4.x-2026.11.28","shard":0,"primary":false,"current_state":"unassigned",
  "can_allocate":"no","allocate_explanation":"cannot allocate because allocation is not permitted to any of the nodes",
  "node_allocation_decisions":[
    {"node_name":"indexer-1","node_decision":"no","deciders":[{"decider":"same_shard","decision":"NO","explanation":"a copy of this shard is already allocated to this node"}]},
    {"node_name":"indexer-2","node_decision":"no","deciders":[{"decider":"node_version","decision":"NO","explanation":"older than the primary version"}]},
    {"node_name":"indexer-3","node_decision":"no","deciders":[{"decider":"disk_threshold","decision":"NO","explanation":"the node is above the high watermark cluster setting [cluster.routing.allocation.disk.watermark.high=90%]"}]}]}`
	settingsAll       = `{"persistent":{},"transient":{}}`
	settingsPrimaries = `{"persistent":{"cluster.routing.allocation.enable":"primaries"},"transient":{}}`
)

func rollServer(t *testing.T, explain, settings string) *indexertest.Server {
	t.Helper()
	return indexertest.NewServer(t, map[string]indexertest.Route{
		"GET /_nodes":                       {Body: []byte(rollNodes)},
		"GET /_cluster/health":              {Body: []byte(rollYellow)},
		"GET /_cat/shards":                  {Body: []byte(rollShards)},
		"GET /_cluster/allocation/explain":  {Body: []byte(explain)},
		"POST /_cluster/allocation/explain": {Body: []byte(explain)},
		"GET /_cluster/settings":            {Body: []byte(settings)},
		"GET /_cat/cluster_manager":         {Body: []byte(`[{"id":"cY3","host":"127.0.0.13","ip":"127.0.0.13","node":"indexer-3"}]`)},
	})
}

func TestGateClusterRollHealth(t *testing.T) {
	cfg := testConfig(t, "components: [indexer]\n")
	for _, tc := range []struct {
		name, explain, settings string
		verdict, want           string
	}{
		{"yellow only because of node_version", explainNodeVersion, settingsAll, "", "node_version decider: 1 replica"},
		{"another decider too", explainDisk, settingsAll, engine.VerdictWait, "disk_threshold"},
		{"allocation still primaries", explainNodeVersion, settingsPrimaries, engine.VerdictWait, "primaries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := indexerDepsWith(t, rollServer(t, tc.explain, tc.settings), cfg, nil)
			out, err := run(t, d, newEnv(d, nil), "gate.cluster_roll_health", nil)
			if tc.verdict == "" {
				if err != nil || !strings.Contains(out.Message, tc.want) {
					t.Fatalf("= %q, %v; want go with %q", out.Message, err, tc.want)
				}
				return
			}
			v, reason, ok := engine.VerdictOf(err)
			if !ok || v != tc.verdict || !strings.Contains(reason, tc.want) {
				t.Fatalf("= %v %q (%v); want %s naming %q", v, reason, err, tc.verdict, tc.want)
			}
		})
	}
}

func TestGateIndexerNodeBack(t *testing.T) {
	cfg := testConfig(t, "components: [indexer]\nindexer:\n  nodes: [indexer-1, indexer-2, indexer-3]\n")
	srv := rollServer(t, explainNodeVersion, settingsAll)
	d := indexerDepsWith(t, srv, cfg, nil)
	for _, tc := range []struct {
		rec     map[string]any
		verdict string
		want    string
	}{
		{map[string]any{"name": "indexer-1", "version": "2.11.1"}, "", "indexer-1 back in the cluster at OpenSearch 2.19.3 (was 2.11.1)"},
		{map[string]any{"name": "indexer-2", "version": "2.11.1"}, engine.VerdictWait, "not newer"},
		{map[string]any{"name": "indexer-4", "version": "2.11.1"}, engine.VerdictWait, "indexer-4 not in the cluster yet"},
	} {
		out, err := run(t, d, newEnv(d, map[string]any{rundata.KeyIndexerNode: tc.rec}), "gate.indexer_node_back", nil)
		if tc.verdict == "" {
			if err != nil || !strings.Contains(out.Message, tc.want) {
				t.Errorf("%v: = %q, %v; want %q", tc.rec, out.Message, err, tc.want)
			}
			continue
		}
		if v, reason, _ := engine.VerdictOf(err); v != tc.verdict || !strings.Contains(reason, tc.want) {
			t.Errorf("%v: = %v %q (%v); want %s %q", tc.rec, v, reason, err, tc.verdict, tc.want)
		}
	}
	// A node that has not joined yet answers _nodes with itself alone: not back.
	srv.Set("GET /_nodes", indexertest.Route{Body: []byte(`{"nodes":{"aW1":{"name":"indexer-1","version":"2.19.3","roles":["data"]}}}`)})
	_, err := run(t, d, newEnv(d, map[string]any{rundata.KeyIndexerNode: map[string]any{"name": "indexer-1", "version": "2.11.1"}}), "gate.indexer_node_back", nil)
	if v, reason, _ := engine.VerdictOf(err); v != engine.VerdictWait || !strings.Contains(reason, "lacks indexer-2, indexer-3") {
		t.Errorf("alone: = %v %q (%v); want pending naming the nodes it does not see", v, reason, err)
	}
	srv.Set("GET /_nodes", indexertest.Route{Body: []byte(rollNodes)})
	// A manager host has no indexer node: the gate is skipped, saying why.
	mcfg := testConfig(t, "components: [manager, shipper]\n")
	md := indexerDepsWith(t, srv, mcfg, nil)
	if out, err := run(t, md, newEnv(md, nil), "gate.indexer_node_back", nil); err != nil || !strings.Contains(out.Message, "SKIPPED: indexer does not run on this host") {
		t.Errorf("manager host: %q, %v", out.Message, err)
	}
}

func TestGateSnapshotRepoNodes(t *testing.T) {
	cfg := testConfig(t, "components: [indexer]\n")
	srv := rollServer(t, explainNodeVersion, settingsAll)
	srv.Set("POST /_snapshot/siemctl/_verify", indexertest.Route{Body: []byte(`{"nodes":{"aW1":{"name":"indexer-1"},"bX2":{"name":"indexer-2"}}}`)})
	d := indexerDepsWith(t, srv, cfg, nil)
	_, err := run(t, d, newEnv(d, nil), "gate.snapshot_repo_nodes", nil)
	if v, reason, _ := engine.VerdictOf(err); v != engine.VerdictNoGo || !strings.Contains(reason, "not reachable from indexer-3") {
		t.Fatalf("= %v %q (%v); want no-go naming indexer-3", v, reason, err)
	}
	srv.Set("POST /_snapshot/siemctl/_verify", indexertest.Route{Body: []byte(`{"nodes":{"aW1":{"name":"indexer-1"},"bX2":{"name":"indexer-2"},"cY3":{"name":"indexer-3"}}}`)})
	if out, err := run(t, d, newEnv(d, nil), "gate.snapshot_repo_nodes", nil); err != nil || !strings.Contains(out.Message, "verified by every node: indexer-1, indexer-2, indexer-3") {
		t.Fatalf("= %q, %v", out.Message, err)
	}
}

// fakeMgrCluster is a manager API answering as a worker's API does, its calls forwarded to the master.
type fakeMgrCluster struct {
	local manager.ClusterLocal
	nodes []manager.ClusterNode
	err   error
}

func (f *fakeMgrCluster) Info(context.Context) (manager.APIInfo, error) {
	return manager.APIInfo{}, nil
}
func (f *fakeMgrCluster) ManagerStatus(context.Context) (manager.DaemonStates, error) {
	return nil, nil
}
func (f *fakeMgrCluster) ListAgents(context.Context, manager.AgentQuery) ([]manager.Agent, error) {
	return nil, nil
}
func (f *fakeMgrCluster) ClusterHealthcheck(context.Context) ([]manager.ClusterNode, error) {
	return f.nodes, f.err
}
func (f *fakeMgrCluster) ClusterLocalInfo(context.Context) (manager.ClusterLocal, error) {
	return f.local, nil
}

func TestGateManagerNodeBack(t *testing.T) {
	cfg := testConfig(t, "components: [manager, shipper]\nmanager:\n  nodes: [manager-1, manager-2]\n")
	now := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	master := manager.ClusterNode{Name: "manager-1", Type: "master", Version: "4.10.0"}
	for _, tc := range []struct {
		name    string
		f       *fakeMgrCluster
		verdict string
		want    string
		log     string    // this node's logs/cluster.log
		started time.Time // its wazuh-clusterd pid file's time (zero: none)
	}{
		// A keepalive from the old connection, before the worker's wazuh-clusterd restarted, is
		// not fresh; one from its new hello is.
		{"keepalive from before the restart", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-2", Type: "worker"},
			nodes: []manager.ClusterNode{master, {Name: "manager-2", Type: "worker", Version: "4.10.0", LastKeepAlive: now.Add(-40 * time.Second)}}},
			engine.VerdictWait, "manager-2 listed with a keepalive from 2026-11-28T00:59:20Z, before its wazuh-clusterd started (2026-11-28T00:59:50Z)", "", now.Add(-10 * time.Second)},
		{"keepalive after the restart", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-2", Type: "worker"},
			nodes: []manager.ClusterNode{master, {Name: "manager-2", Type: "worker", Version: "4.10.0", LastKeepAlive: now.Add(-5 * time.Second)}}},
			"", "manager-2 (worker) listed by the master at 4.10.0", "", now.Add(-10 * time.Second)},
		// Between the master's turn and the worker's, the old worker is refused (3031) and not
		// listed: the master's own gate does not wait for it.
		{"the master at the target, its old worker refused", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-1", Type: "master"},
			nodes: []manager.ClusterNode{master}}, "", "manager-1 (master) listed by the master at 4.10.0", "", time.Time{}},
		// A worker at the target refused with 3031 in its own turn: the master is not at the target.
		{"refused with 3031 in its own turn", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-2", Type: "worker"},
			err: &manager.APIError{Status: 500, Code: 3023, Title: "Worker node is not connected to master"}}, engine.VerdictWait,
			`manager-2 is refused by its master with 3031: the master runs another version than this node's 4.10.0 (logs/cluster.log: "2026/11/28 01:00:00 ERROR: [Worker manager-2] [Main] Could not connect to master: Error 3031 - Worker and master versions are not the same."); the fix: bring the master to 4.10.0`,
			"2026/11/28 00:59:50 INFO: [Worker manager-2] [Main] Connecting to 127.0.0.21:1516.\n2026/11/28 01:00:00 ERROR: [Worker manager-2] [Main] Could not connect to master: Error 3031 - Worker and master versions are not the same.\n", time.Time{}},
		{"back at the target", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-2", Type: "worker"},
			nodes: []manager.ClusterNode{master, {Name: "manager-2", Type: "worker", Version: "4.10.0", LastKeepAlive: now.Add(-5 * time.Second)}}},
			"", "manager-2 (worker) listed by the master at 4.10.0", "", time.Time{}},
		{"refused with 3031: not listed", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-2", Type: "worker"},
			nodes: []manager.ClusterNode{master}}, engine.VerdictWait, "3031", "", time.Time{}},
		{"not connected", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-2", Type: "worker"},
			err: &manager.APIError{Status: 500, Code: 3023, Title: "Worker node is not connected to master"}}, engine.VerdictWait, "if its logs/cluster.log says 3031", "", time.Time{}},
		{"stale keepalive", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-2", Type: "worker"},
			nodes: []manager.ClusterNode{master, {Name: "manager-2", Type: "worker", Version: "4.10.0", LastKeepAlive: now.Add(-10 * time.Minute)}}},
			engine.VerdictWait, "keepalive", "", time.Time{}},
		{"old version", &fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-1", Type: "master"},
			nodes: []manager.ClusterNode{{Name: "manager-1", Type: "master", Version: "4.9.0"}}}, engine.VerdictWait, "not the target 4.10.0", "", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *cfg
			c.Manager.InstallDir = t.TempDir()
			if tc.log != "" {
				if err := os.MkdirAll(filepath.Join(c.Manager.InstallDir, "logs"), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(c.Manager.InstallDir, "logs", "cluster.log"), []byte(tc.log), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.started.IsZero() {
				pid := filepath.Join(c.Manager.InstallDir, "var", "run", "wazuh-clusterd-4242.pid")
				if err := os.MkdirAll(filepath.Dir(pid), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(pid, nil, 0o640); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(pid, tc.started, tc.started); err != nil {
					t.Fatal(err)
				}
			}
			d := depsWith(&c, nil)
			d.Now = func() time.Time { return now }
			d.Manager = clientset.Of[steps.ManagerAPI](tc.f)
			out, err := run(t, d, newEnv(d, map[string]any{rundata.KeyTarget: "4.10.0"}), "gate.manager_node_back", nil)
			if tc.verdict == "" {
				if err != nil || !strings.Contains(out.Message, tc.want) {
					t.Fatalf("= %q, %v; want %q", out.Message, err, tc.want)
				}
				return
			}
			if v, reason, _ := engine.VerdictOf(err); v != tc.verdict || !strings.Contains(reason, tc.want) {
				t.Fatalf("= %v %q (%v); want %s %q", v, reason, err, tc.verdict, tc.want)
			}
		})
	}
}

// The roll's record through the kinds: rollout.create writes it once from both clusters' facts
// (a second create of the same run is skipped), rollout.phase opens the turns, gate.rollout_done
// says no-go naming the entries left.
func TestRolloutKinds(t *testing.T) {
	cfg := testConfig(t, "components: [indexer]\nindexer:\n  nodes: [indexer-1, indexer-2, indexer-3]\nmanager:\n  nodes: [manager-1, manager-2]\ndashboard:\n  url: https://127.0.0.31:5601\n")
	docs := indexertest.NewDocuments(rollout.Index)
	routes := docs.Routes(rollout.DocID)
	routes["GET /_nodes"] = indexertest.Route{Body: []byte(strings.ReplaceAll(rollNodes, "2.19.3", "2.11.1"))}
	routes["GET /_cat/cluster_manager"] = indexertest.Route{Body: []byte(`[{"id":"cY3","host":"127.0.0.13","ip":"127.0.0.13","node":"indexer-3"}]`)}
	d := indexerDepsWith(t, indexertest.NewServer(t, routes), cfg, nil)
	now := time.Now().UTC()
	d.Manager = clientset.Of[steps.ManagerAPI](&fakeMgrCluster{local: manager.ClusterLocal{Node: "manager-1", Type: "master"}, nodes: []manager.ClusterNode{
		{Name: "manager-1", Type: "master", Version: "4.9.0"}, {Name: "manager-2", Type: "worker", Version: "4.9.0", LastKeepAlive: now}}})
	e := newEnv(d, map[string]any{rundata.KeyTarget: "4.10.0"})
	out, err := run(t, d, e, "rollout.create", nil)
	if err != nil || !strings.Contains(out.Message, "order indexer/indexer-1, indexer/indexer-2, indexer/indexer-3, manager/manager-1, manager/manager-2, dashboard/127.0.0.31") {
		t.Fatalf("create = %q, %v", out.Message, err)
	}
	if out, err := run(t, d, e, "rollout.create", nil); err != nil || !strings.HasPrefix(out.Message, "SKIPPED: the record of run "+e.RunID()) {
		t.Errorf("second create = %q, %v", out.Message, err)
	}
	if out, err := run(t, d, e, "rollout.phase", map[string]any{"from": []any{"apply"}, "to": "rolling"}); err != nil || !strings.Contains(out.Message, "is rolling") {
		t.Errorf("phase = %q, %v", out.Message, err)
	}
	_, err = run(t, d, e, "gate.rollout_done", nil)
	if v, reason, _ := engine.VerdictOf(err); v != engine.VerdictNoGo || !strings.Contains(reason, "indexer/indexer-1 pending") {
		t.Errorf("done gate = %v %q (%v)", v, reason, err)
	}
	// Closing the record journals the roll's summary (the run's report shows it).
	if _, err := run(t, d, e, "rollout.phase", map[string]any{"from": []any{"rolling"}, "to": "finish"}); err != nil {
		t.Fatal(err)
	}
	var sum rollout.Summary
	if ok, _ := e.Get(steps.KeyRoll, &sum); ok {
		t.Errorf("a summary before the record is closed: %+v", sum)
	}
	out, err = run(t, d, e, "rollout.phase", map[string]any{"from": []any{"finish"}, "to": "done"})
	if err != nil || !strings.Contains(out.Message, "is done; run "+e.RunID()) || !strings.Contains(out.Message, "→ 4.10.0: 6 entries (6 pending)") {
		t.Errorf("phase done = %q, %v", out.Message, err)
	}
	if ok, err := e.Get(steps.KeyRoll, &sum); !ok || err != nil || len(sum.Entries) != 6 || sum.Phase != rollout.PhaseDone || sum.Entries[5].Name != "dashboard/127.0.0.31" {
		t.Errorf("journaled summary %+v (%v, %v)", sum, ok, err)
	}
}

// The end of a roll: both clusters on one version, and every manager node at the target.
func TestGateClusterNodesAtTarget(t *testing.T) {
	cfg := testConfig(t, "components: [indexer]\nindexer:\n  nodes: [indexer-1, indexer-2, indexer-3]\nmanager:\n  nodes: [manager-1, manager-2]\n")
	srv := rollServer(t, explainNodeVersion, settingsAll)
	srv.Set("GET /_nodes", indexertest.Route{Body: []byte(strings.ReplaceAll(rollNodes, "2.11.1", "2.19.3"))})
	srv.Set("GET /_cat/nodes", indexertest.Route{Body: []byte(`[{"name":"indexer-1","heap.percent":"30","disk.used_percent":"40.0"},{"name":"indexer-2","heap.percent":"30","disk.used_percent":"40.0"},{"name":"indexer-3","heap.percent":"30","disk.used_percent":"40.0"}]`)})
	d := indexerDepsWith(t, srv, cfg, nil)
	now := time.Now()
	d.Now = func() time.Time { return now }
	mg := &fakeMgrCluster{nodes: []manager.ClusterNode{{Name: "manager-1", Type: "master", Version: "4.9.0"}, {Name: "manager-2", Type: "worker", Version: "4.9.0", LastKeepAlive: now}}}
	d.Manager = clientset.Of[steps.ManagerAPI](mg)
	e := newEnv(d, map[string]any{rundata.KeyTarget: "4.10.0"})
	if out, err := run(t, d, e, "gate.cluster_nodes", nil); err != nil || !strings.Contains(out.Message, "all on 2.19.3") {
		t.Fatalf("preflight form = %q, %v", out.Message, err)
	}
	_, err := run(t, d, e, "gate.cluster_nodes", map[string]any{"at_target": true})
	if v, reason, _ := engine.VerdictOf(err); v != engine.VerdictNoGo || !strings.Contains(reason, "not at the target 4.10.0: manager-1 4.9.0, manager-2 4.9.0") {
		t.Fatalf("at_target = %v %q (%v)", v, reason, err)
	}
	for i := range mg.nodes {
		mg.nodes[i].Version = "4.10.0"
	}
	if out, err := run(t, d, e, "gate.cluster_nodes", map[string]any{"at_target": true}); err != nil || !strings.Contains(out.Message, "all on 4.10.0") {
		t.Fatalf("at the target = %q, %v", out.Message, err)
	}
}

// TestGateSnapshotRepoNodesMissing: a repository that is not registered (the node answers 404
// repository_missing_exception to _verify) is a no-go whose fix is the prepare command; path.repo
// is named only for the nodes that lack it.
func TestGateSnapshotRepoNodesMissing(t *testing.T) {
	cfg := testConfig(t, "components: [indexer]\n")
	srv := rollServer(t, explainNodeVersion, settingsAll)
	srv.Set("POST /_snapshot/siemctl/_verify", indexertest.Route{Status: 404, Body: []byte(`{"error":{"root_cause":[{"type":"repository_missing_exception","reason":"[siemctl] missing"}],"type":"repository_missing_exception","reason":"[siemctl] missing"},"status":404}`)})
	every := `{"nodes":{"aW1":{"name":"indexer-1","settings":{"path":{"repo":["/srv/snap"]}}},"bX2":{"name":"indexer-2","settings":{"path":{"repo":"/srv/snap"}}},"cY3":{"name":"indexer-3","settings":{"path":{"repo":["/srv/snap"]}}}}}`
	srv.Set("GET /_nodes/settings", indexertest.Route{Body: []byte(every)})
	d := indexerDepsWith(t, srv, cfg, nil)
	_, err := run(t, d, newEnv(d, nil), "gate.snapshot_repo_nodes", nil)
	v, reason, _ := engine.VerdictOf(err)
	if v != engine.VerdictNoGo || !strings.Contains(reason, `"siemctl" is not registered`) || !strings.Contains(reason, "siemctl indexer repository prepare --yes") ||
		strings.Contains(reason, "no path.repo on") {
		t.Fatalf("every node with path.repo: %v %q; want a no-go naming the prepare command only", v, reason)
	}
	srv.Set("GET /_nodes/settings", indexertest.Route{Body: []byte(strings.Replace(every, `"settings":{"path":{"repo":"/srv/snap"}}`, `"settings":{}`, 1))})
	_, err = run(t, d, newEnv(d, nil), "gate.snapshot_repo_nodes", nil)
	if v, reason, _ := engine.VerdictOf(err); v != engine.VerdictNoGo || !strings.Contains(reason, "no path.repo on indexer-2:") || strings.Contains(reason, "indexer-1") {
		t.Fatalf("indexer-2 without path.repo: %v %q; want a no-go naming indexer-2 alone", v, reason)
	}
}

// TestUnitActiveBeforeATurn: node.yaml's indexer/unit-active on a host whose indexer unit was
// stopped names the unit, its state and the exact fix (issue 34 item 4), not a refused connection.
func TestUnitActiveBeforeATurn(t *testing.T) {
	cfg := testConfig(t, "components: [indexer]\n")
	u := newUnits(true)
	u.Set(units.UnitStatus{Name: cfg.Units()["indexer"], LoadState: "loaded", ActiveState: units.Inactive, SubState: "dead"})
	d := depsWith(cfg, u)
	_, err := run(t, d, newEnv(d, nil), "gate.units_active", map[string]any{"components": []string{"indexer"}})
	if err == nil || !strings.Contains(err.Error(), cfg.Units()["indexer"]+" (inactive/dead) (fix: siemctl services start indexer)") {
		t.Fatalf("= %v; want the unit, its state and siemctl services start indexer", err)
	}
	u.Set(units.UnitStatus{Name: cfg.Units()["indexer"], LoadState: "loaded", ActiveState: units.Failed, SubState: "failed"})
	if _, err := run(t, d, newEnv(d, nil), "gate.units_active", map[string]any{"components": []string{"indexer"}}); err == nil ||
		!strings.Contains(err.Error(), "(failed/failed) (fix: siemctl services restart indexer)") {
		t.Fatalf("failed unit = %v; want siemctl services restart indexer", err)
	}
}
