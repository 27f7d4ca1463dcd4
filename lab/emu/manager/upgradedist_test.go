package manager

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// distNode starts a cluster daemon on the shared clock, with short intervals.
func distNode(t *testing.T, o ClusterOptions) *ClusterDaemon {
	t.Helper()
	o.Version, o.Listen = "4.9.0", "127.0.0.1:0"
	o.KeepAlive, o.Retry, o.SyncIntegrity, o.SyncAgentInfo = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	o.CheckKeepAlive, o.MaxNoKeepAlive = time.Second, time.Hour
	d, err := StartCluster(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestUpgradeDistributed is the upgrade on a master with a worker: the agents reporting to the worker
// (011–020, synced to the master by agent-info) are upgraded through it and their tasks are the
// master's; once the worker is cut from the master, a request of its agents only is answered 3022
// "Unknown node ID" (HTTP 400), a mixed one upgrades the master's share and names the worker in a
// failed item, and the worker's tasks the master knows stop where they were and turn Timeout.
func TestUpgradeDistributed(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	set := func(tm time.Time) { clock.Store(&tm) }
	set(testNow)
	now := func() time.Time { return *clock.Load() }
	timing := strings.Replace(string(DefaultOssecConf(1514, 1515, 5514)), "</ossec_config>", `  <emulator>
    <upgrade_send_time>4s</upgrade_send_time>
    <upgrade_restart_time>6s</upgrade_restart_time>
    <upgrade_task_timeout>60s</upgrade_task_timeout>
  </emulator>
</ossec_config>`, 1)

	m := distNode(t, ClusterOptions{Home: newHome(t, 0), Now: now,
		Conf: ClusterConfig{Name: "wazuh", NodeName: "master-node", NodeType: "master", Port: 1516}})
	mf := newAPI(t, 10, func(o *APIOptions) { o.Cluster, o.Now = m, now })
	m.mu.Lock() // the master's database is its API's (read and written under m.mu)
	m.o.SyncAgents, m.o.ActiveAgents = mf.api.agents.SyncNodeAgents, mf.api.activeAgents
	m.mu.Unlock()
	wf := newAPI(t, 0, func(o *APIOptions) { o.Now = now })
	if err := SeedFrom(wf.home, 11, 10, true, testNow); err != nil {
		t.Fatal(err)
	}
	if got, _ := NewAgentStore(wf.home).Agents(); len(got) != 11 || got[1].ID != 11 || got[10].ID != 20 || got[1].Name != "agent-000011" {
		t.Fatalf("the worker's seed: %d agents", len(got))
	}
	if err := os.WriteFile(mf.home.OssecConf(), []byte(timing), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wf.home.OssecConf(), []byte(strings.Replace(timing, "<node_name>node01<", "<node_name>worker1<", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	w := distNode(t, ClusterOptions{Home: wf.home, Now: now, MasterAddr: m.Addr(), AgentInfo: wf.api.agentInfo, DAPI: wf.api.serveDAPI,
		Conf: ClusterConfig{Name: "wazuh", NodeName: "worker1", NodeType: "worker", Port: 1516, Nodes: []string{"127.0.0.1"}}})
	tok := mf.login("siem", "siem")
	agent := func(id string) (node, status, version string) {
		t.Helper()
		_, _, b := mf.do("GET", "/agents?select=node_name,status,version&agents_list="+id, tok, "")
		e := decodeEnv(t, b)
		if len(e.Data.AffectedItems) != 1 {
			return "", "", ""
		}
		var a struct {
			Node    string `json:"node_name"`
			Status  string `json:"status"`
			Version string `json:"version"`
		}
		_ = json.Unmarshal(e.Data.AffectedItems[0], &a)
		return a.Node, a.Status, a.Version
	}
	waitFor(t, "the worker's agents on the master", func() bool { n, _, _ := agent("011"); return n == "worker1" })
	if n, st, v := agent("014"); n != "worker1" || st != StatusActive || v != "Wazuh v4.7.5" {
		t.Fatalf("014 on the master: %s %s %s", n, st, v)
	}

	// A request across both nodes: each node's share where its agents are, one answer.
	code, _, b := mf.do("PUT", "/agents/upgrade?agents_list=001,008,011,014,012,099", tok, "")
	e := decodeEnv(t, b)
	if code != 200 || e.Error != 2 || e.Data.TotalAffectedItems != 4 || !strings.Contains(string(b), `"code":1822`) || !strings.Contains(string(b), `"code":1701`) {
		t.Fatalf("upgrade across nodes: %d %s", code, b)
	}
	seen := map[int]string{}
	for _, raw := range e.Data.AffectedItems {
		var tc taskCreated
		_ = json.Unmarshal(raw, &tc)
		if other, dup := seen[tc.TaskID]; dup {
			t.Fatalf("task %d for %s and %s: the master numbers every node's tasks", tc.TaskID, other, tc.Agent)
		}
		seen[tc.TaskID] = tc.Agent
	}
	// The worker's module created its agents' tasks.
	wm := wf.api.upgrades
	wm.mu.Lock()
	if len(wm.tasks) != 2 || wm.tasks[11] == nil || wm.tasks[14] == nil || wm.tasks[11].Node != "worker1" {
		t.Errorf("the worker's tasks: %v", wm.tasks)
	}
	wm.mu.Unlock()
	code, _, b = mf.do("GET", "/agents/upgrade_result?agents_list=001,011", tok, "")
	if code != 200 || !strings.Contains(string(b), `"agent":"011","task_id":`) || !strings.Contains(string(b), `"node":"worker1"`) || !strings.Contains(string(b), `"status":"In progress"`) {
		t.Fatalf("upgrade_result on the master: %d %s", code, b)
	}
	// The worker's agents come back upgraded on the worker; the master sees it by agent-info.
	set(testNow.Add(11 * time.Second))
	waitFor(t, "011 upgraded on the master", func() bool { _, st, v := agent("011"); return st == StatusActive && v == "Wazuh v4.9.0" })
	if r := mf.results(tok, "011,014,001"); r["011"] != TaskUpdated || r["014"] != TaskUpdated || r["001"] != TaskUpdated {
		t.Fatalf("after the restart: %v", r)
	}
	// 020's upgrade starts, then the worker is cut from the master.
	if code, _, b := mf.do("PUT", "/agents/upgrade?agents_list=020", tok, ""); code != 200 || !strings.Contains(string(b), `"agent":"020"`) {
		t.Fatalf("020: %d %s", code, b)
	}
	w.Close()
	waitFor(t, "the master to drop the worker", func() bool { return len(m.ConnectedWorkers()) == 0 })
	code, _, b = mf.do("PUT", "/agents/upgrade?agents_list=016", tok, "")
	if code != 400 || !strings.Contains(string(b), `"error":3022`) || !strings.Contains(string(b), `"title":"Wazuh Cluster Error"`) || !strings.Contains(string(b), `"detail":"Unknown node ID"`) {
		t.Fatalf("only the cut worker's agents: %d %s", code, b)
	}
	code, _, b = mf.do("PUT", "/agents/upgrade?agents_list=010,016", tok, "")
	if e := decodeEnv(t, b); code != 200 || e.Error != 2 || e.Data.TotalAffectedItems != 1 ||
		!strings.Contains(string(b), `{"error":{"code":3022,"message":"Unknown node ID","remediation":"Check the name of the node"},"id":["worker1"]}`) {
		t.Fatalf("the master's share and the cut worker's: %d %s", code, b)
	}
	set(testNow.Add(11*time.Second + 61*time.Second))
	if r := mf.results(tok, "011,020"); r["011"] != TaskUpdated || r["020"] != TaskTimeout {
		t.Fatalf("the worker's tasks after the cut: %v", r)
	}
	if n, st, v := agent("020"); n != "worker1" || st != StatusActive || v != "Wazuh v4.7.5" {
		t.Fatalf("020 as last synced: %s %s %s", n, st, v)
	}
	// agents_list=all: the connected nodes only, each its own agents.
	code, _, b = mf.do("PUT", "/agents/upgrade?agents_list=all", tok, "")
	if code != 200 || strings.Contains(string(b), `"agent":"011"`) || strings.Contains(string(b), "3022") {
		t.Fatalf("all without the worker: %d %s", code, b)
	}
}
