package manager

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// setNodeName gives h's ossec.conf the cluster node name (what the API's views call this node).
func setNodeName(t *testing.T, h Home, name string) {
	t.Helper()
	b, err := os.ReadFile(h.OssecConf())
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.Replace(string(b), "<node_name>node01</node_name>", "<node_name>"+name+"</node_name>", 1)
	if conf == string(b) {
		t.Fatal("no <node_name>node01</node_name> in the packaged ossec.conf")
	}
	if err := os.WriteFile(h.OssecConf(), []byte(conf), 0o640); err != nil {
		t.Fatal(err)
	}
}

// The master holds every agent of the cluster, as the real master's global.db does: the worker's
// agent-info sync writes the agents reporting to it into the master's database with the worker as
// their node_name and its hostname as their manager. The healthcheck counts for each node only the
// active agents reporting to it (get_health counts the master's database by node_name, id!=000), not
// every active agent of a node's store: master-node 3 of 001-005, worker01 2 of 006-010.
func TestClusterAgentsInTheMastersDatabase(t *testing.T) {
	mf := newAPI(t, 5, func(o *APIOptions) { o.Hostname = "wazuh-master" })
	wf := newAPI(t, 0, func(o *APIOptions) { o.Hostname = "wazuh-worker1" })
	if err := SeedFrom(wf.home, 6, 5, true, testNow); err != nil {
		t.Fatal(err)
	}
	setNodeName(t, mf.home, "master-node")
	setNodeName(t, wf.home, "worker01")
	m := clusterNode(t, mf.home, "master", "master-node", "4.9.0", "", "")
	m.mu.Lock()
	m.o.ActiveAgents, m.o.SyncAgents = mf.api.activeAgents, mf.api.agents.SyncNodeAgents
	m.mu.Unlock()
	w := clusterNodeWith(t, wf.home, "worker", "worker01", "4.9.0", m.Addr(), t.TempDir(), func(o *ClusterOptions) { o.AgentInfo = wf.api.agentInfo })
	var nodes []ClusterNode
	waitFor(t, "the worker's agents in the master's database", func() bool {
		var err error
		nodes, err = m.Health(nil)
		agents, _ := NewAgentStore(mf.home).Agents()
		return err == nil && len(nodes) == 2 && len(agents) == 11 // 000 and 001-010
	})
	got := map[string]int{}
	for _, n := range nodes {
		got[n.Info.Name] = n.Info.NActiveAgents
	}
	if got["master-node"] != 3 || got["worker01"] != 2 {
		t.Errorf("n_active_agents %v, want master-node 3 and worker01 2 (each node's own)", got)
	}
	// The worker asks its master: the same counts.
	if wn, err := w.Health(nil); err != nil || len(wn) != 2 || wn[0].Info.NActiveAgents+wn[1].Info.NActiveAgents != 5 {
		t.Errorf("healthcheck through the worker: %v %+v", err, wn)
	}

	// GET /agents on the master lists the worker's agents with the worker's node and hostname.
	tok := mf.login("siem", "siem")
	code, _, b := mf.do("GET", "/agents?select=node_name,manager,status&limit=100", tok, "")
	e := decodeEnv(t, b)
	if code != 200 || e.Data.TotalAffectedItems != 11 {
		t.Fatalf("GET /agents on the master: %d %s", code, b)
	}
	active := map[string]int{}
	for _, raw := range e.Data.AffectedItems {
		var a struct{ ID, Status, Manager, Node string }
		var row map[string]string
		_ = json.Unmarshal(raw, &row)
		a.ID, a.Status, a.Manager, a.Node = row["id"], row["status"], row["manager"], row["node_name"]
		wantNode, wantHost := "master-node", "wazuh-master"
		if a.ID >= "006" {
			wantNode, wantHost = "worker01", "wazuh-worker1"
		}
		if a.Status == StatusNeverConnected {
			wantNode, wantHost = "unknown", ""
		}
		if a.Node != wantNode || a.Manager != wantHost {
			t.Errorf("agent %s on the master: node_name %q manager %q, want %q %q", a.ID, a.Node, a.Manager, wantNode, wantHost)
		}
		if a.Status == StatusActive && a.ID != "000" {
			active[a.Node]++
		}
	}
	if active["master-node"] != got["master-node"] || active["worker01"] != got["worker01"] {
		t.Errorf("the master's list has %v active by node, the healthcheck %v", active, got)
	}
	// The worker's own database keeps only its agents; the master's cold copy of queue/db holds the
	// worker's, where wazuh-db keeps global.db.
	if wf.api.activeAgents("worker01") != 2 || wf.api.activeAgents("master-node") != 0 {
		t.Errorf("worker: active %d/%d", wf.api.activeAgents("worker01"), wf.api.activeAgents("master-node"))
	}
	if b, err := os.ReadFile(mf.home.Path("queue", "db", "global.db")); err != nil || !bytes.Contains(b, []byte(`"node_name":"worker01","manager_host":"wazuh-worker1"`)) {
		t.Errorf("queue/db/global.db: %v\n%s", err, b)
	}
	if b, _ := os.ReadFile(mf.home.ClientKeys()); bytes.Contains(b, []byte("006 ")) {
		t.Errorf("the master's client.keys has a worker's agent without its key:\n%s", b)
	}
}

// A worker's agents replace that worker's rows at each sync: an agent the worker no longer has
// leaves the master's database, an id the master holds as its own stays the master's, another
// worker's rows are left alone; nothing is written when nothing changed.
func TestSyncNodeAgents(t *testing.T) {
	h := newHome(t, 3) // the master's 001-003
	s := NewAgentStore(h)
	row := func(id int, conn string) *Agent {
		return &Agent{ID: id, Name: "a" + strings.Repeat("x", id), RegisterIP: "any", Conn: conn, Key: "secret", Manager: "w1-host"}
	}
	if err := s.SyncNodeAgents("w2", []*Agent{row(9, StatusActive)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncNodeAgents("w1", []*Agent{row(0, StatusActive), row(2, StatusActive), row(4, StatusActive), row(5, StatusDisconnected)}); err != nil {
		t.Fatal(err)
	}
	byID := func() map[int]*Agent {
		agents, err := s.Agents()
		if err != nil {
			t.Fatal(err)
		}
		return indexAgents(agents)
	}
	a := byID()
	if len(a) != 7 || a[2].Node != "" || a[4].Node != "w1" || a[5].Node != "w1" || a[9].Node != "w2" || a[4].Key != "" || a[0].Node != "" {
		t.Fatalf("after the syncs: %d agents %+v %+v", len(a), a[2], a[4])
	}
	st, _ := os.Stat(h.AgentsDB())
	time.Sleep(10 * time.Millisecond)
	if err := s.SyncNodeAgents("w1", []*Agent{row(4, StatusActive), row(5, StatusDisconnected)}); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(h.AgentsDB()); inodeOf(st2) != inodeOf(st) {
		t.Errorf("an unchanged sync rewrote the database")
	}
	if err := s.SyncNodeAgents("w1", []*Agent{row(4, StatusDisconnected)}); err != nil {
		t.Fatal(err)
	}
	if a := byID(); a[5] != nil || a[4].Conn != StatusDisconnected || a[9] == nil || a[1] == nil {
		t.Errorf("after w1 dropped 005: %+v", a)
	}
}

// The agents database is where wazuh-db keeps global.db (queue/db, what siemctl cold-copies before an
// upgrade); a database an older emulator kept in var/db/agents.jsonl moves there instead of being
// seeded over.
func TestAgentsDatabaseInQueueDB(t *testing.T) {
	h := Home{Dir: filepath.Join(t.TempDir(), "var", "ossec")}
	if h.AgentsDB() != filepath.Join(h.Dir, "queue", "db", "global.db") {
		t.Fatalf("agents database at %s", h.AgentsDB())
	}
	old := h.Path("var", "db", "agents.jsonl")
	if err := os.MkdirAll(filepath.Dir(old), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte(`{"id":0,"register_ip":"127.0.0.1","key":"","conn":"active","date_add":1,"synced":false}`+"\n"+
		`{"id":42,"name":"kept","register_ip":"any","key":"k","conn":"active","date_add":1,"synced":true}`+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := SeedFrom(h, 1, 5, false, testNow); err != nil {
		t.Fatal(err)
	}
	agents, err := NewAgentStore(h).Agents()
	if err != nil || len(agents) != 2 || agents[1].Name != "kept" {
		t.Fatalf("moved database: %v %+v", err, agents)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old database is still at %s", old)
	}
}

// A master that cannot write a worker's agents answers the sync with the error, which the worker logs;
// its session goes on and the next sync tries again.
func TestAgentInfoSyncFailureKeepsTheSession(t *testing.T) {
	mh, wh := newHome(t, 0), newHome(t, 2)
	m := clusterNodeWith(t, mh, "master", "master-node", "4.9.0", "", "", func(o *ClusterOptions) {
		o.SyncAgents = func(string, []*Agent) error { return errors.New("database is locked") }
	})
	w := clusterNodeWith(t, wh, "worker", "worker01", "4.9.0", m.Addr(), t.TempDir(), func(o *ClusterOptions) {
		o.AgentInfo = func() []*Agent { a, _ := NewAgentStore(wh).Agents(); return a }
	})
	waitFor(t, "the worker to log the master's error twice", func() bool {
		b, _ := os.ReadFile(wh.ClusterLog())
		return strings.Count(string(b), "[Agent-info sync] Error synchronizing agent info: Error 1000 - ") >= 2
	})
	if b, _ := os.ReadFile(wh.ClusterLog()); !w.Connected() || strings.Contains(string(b), "The master closed the connection") {
		t.Errorf("the worker left the cluster over a failed sync:\n%s", b)
	}
	if b, _ := os.ReadFile(mh.ClusterLog()); !strings.Contains(string(b), "Error updating agent-info: database is locked") {
		t.Errorf("the master's cluster.log does not say why:\n%s", b)
	}
}
