package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// clusterNode starts one node's cluster daemon on loopback with short intervals.
func clusterNode(t *testing.T, h Home, typ, name, version, masterAddr string, fdir string) *ClusterDaemon {
	t.Helper()
	return clusterNodeWith(t, h, typ, name, version, masterAddr, fdir, nil)
}

// clusterNodeWith is clusterNode with its options changed by mut (nil: every node counts 3 active
// agents).
func clusterNodeWith(t *testing.T, h Home, typ, name, version, masterAddr string, fdir string, mut func(*ClusterOptions)) *ClusterDaemon {
	t.Helper()
	o := ClusterOptions{Home: h, Version: version, Faults: faults.Checker{Dir: fdir},
		Conf:      ClusterConfig{Name: "wazuh", NodeName: name, NodeType: typ, Port: 1516, Nodes: []string{"127.0.0.1"}},
		KeepAlive: 50 * time.Millisecond, Retry: 50 * time.Millisecond, SyncIntegrity: 50 * time.Millisecond,
		SyncAgentInfo: 50 * time.Millisecond, CheckKeepAlive: time.Second, MaxNoKeepAlive: 5 * time.Second,
		Listen: "127.0.0.1:0", MasterAddr: masterAddr, ActiveAgents: func(string) int { return 3 }}
	if mut != nil {
		mut(&o)
	}
	d, err := StartCluster(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func logHas(h Home, s string) bool {
	b, _ := os.ReadFile(h.ClusterLog())
	return bytes.Contains(b, []byte(s))
}

func TestParseClusterConfig(t *testing.T) {
	conf := `<ossec_config><cluster><name>prod</name><node_name>worker01</node_name><node_type>worker</node_type>
<key>c98b62a9b6169ac5f67dae55ae4a9088</key><port>1600</port><bind_addr>0.0.0.0</bind_addr>
<nodes><node>127.0.0.21</node></nodes><hidden>no</hidden><disabled>no</disabled></cluster></ossec_config>`
	c, err := ParseClusterConfig([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "prod" || c.NodeName != "worker01" || c.NodeType != "worker" || c.Port != 1600 || c.Disabled ||
		len(c.Nodes) != 1 || c.Nodes[0] != "127.0.0.21" || c.Key != "c98b62a9b6169ac5f67dae55ae4a9088" {
		t.Fatalf("parsed %+v", c)
	}
	if _, err := ParseClusterConfig([]byte(`<ossec_config><cluster><node_type>boss</node_type></cluster></ossec_config>`)); err == nil ||
		!strings.Contains(err.Error(), "(1235): Invalid value for element 'node_type': boss.") {
		t.Fatalf("bad node_type: %v", err)
	}
	c, err = ParseClusterConfig(DefaultOssecConf(1514, 1515, 514))
	if err != nil || !c.Disabled || c.Port != 1516 || c.NodeType != "master" {
		t.Fatalf("packaged: %+v %v", c, err)
	}
}

func TestClusterWorkerJoinsAndSyncs(t *testing.T) {
	mh, wh := newHome(t, 0), newHome(t, 0)
	// The worker's ruleset differs: the integrity sync brings the master's.
	if err := os.WriteFile(wh.LocalRules(), []byte("<group name=\"local,\"></group>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := clusterNode(t, mh, "master", "master-node", "4.9.0", "", "")
	w := clusterNode(t, wh, "worker", "worker01", "4.9.0", m.Addr(), t.TempDir())
	waitFor(t, "the worker to connect", w.Connected)
	var nodes []ClusterNode
	waitFor(t, "a synced worker with its agents and keepalive", func() bool {
		var err error
		nodes, err = m.Health(nil)
		return err == nil && len(nodes) == 2 && nodes[1].Synced && nodes[1].Info.NActiveAgents == 3 &&
			nodes[1].Status.LastSyncAgentInfo["date_end_master"] != notAvailable
	})
	if nodes[0].Info.Name != "master-node" || nodes[0].Status != nil || nodes[1].Info.Version != "4.9.0" || nodes[1].Info.IP != "127.0.0.1" {
		t.Fatalf("health %+v", nodes)
	}
	mr, _ := os.ReadFile(mh.LocalRules())
	wr, _ := os.ReadFile(wh.LocalRules())
	if !bytes.Equal(mr, wr) {
		t.Fatal("the integrity sync did not bring the master's local_rules.xml to the worker")
	}
	first := nodes[1].Status.LastKeepAlive
	waitFor(t, "the keepalive to move", func() bool {
		n, err := w.Health([]string{"worker01"}) // through the master
		return err == nil && len(n) == 1 && n[0].Status.LastKeepAlive != first
	})
	for _, want := range []string{"[Master] [Main] Serving on ('127.0.0.1', ", "[Worker worker01] [Main] Successfully connected to master.",
		"] [Main] Connection from ('127.0.0.1', ", "[Worker worker01] [Keep Alive] Successful response from master: keepalive",
		"[Worker worker01] [Agent-info sync] Finished in"} {
		if !logHas(mh, want) && !logHas(wh, want) {
			t.Errorf("cluster.log lacks %q", want)
		}
	}
}

func TestClusterVersionMismatch(t *testing.T) {
	mh, wh := newHome(t, 0), newHome(t, 0)
	m := clusterNode(t, mh, "master", "master-node", "4.9.0", "", "")
	w := clusterNode(t, wh, "worker", "worker01", "4.9.1", m.Addr(), t.TempDir())
	waitFor(t, "the rejection logged on both sides, and a retry", func() bool {
		b, _ := os.ReadFile(wh.ClusterLog())
		return bytes.Count(b, []byte("[Worker worker01] [Main] Could not connect to master: Error 3031 - Worker and master versions are not the same.")) >= 2 &&
			logHas(wh, "[Worker worker01] [Main] The connection has been closed. Reconnecting in 10 seconds.") &&
			logHas(mh, "worker01] [Main] Internal error processing request 'b'hello'': Error 3031 - Worker and master versions are not the same")
	})
	if w.Connected() {
		t.Fatal("a worker on another version is connected")
	}
	nodes, _ := m.Health(nil)
	if len(nodes) != 1 {
		t.Fatalf("the master lists a rejected worker: %+v", nodes)
	}
	if _, err := w.Health(nil); err != ErrClusterDisconnected {
		t.Fatalf("worker health: %v", err)
	}
}

func TestClusterDownFault(t *testing.T) {
	mh, wh := newHome(t, 0), newHome(t, 0)
	markRunning(t, wh)
	_ = writePidfiles(wh, []string{"wazuh-clusterd"}, os.Getpid())
	fdir := t.TempDir()
	m := clusterNode(t, mh, "master", "master-node", "4.9.0", "", "")
	w := clusterNode(t, wh, "worker", "worker01", "4.9.0", m.Addr(), fdir)
	waitFor(t, "the worker to connect", w.Connected)
	if err := faults.Set(fdir, faults.ClusterDown, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the master to lose the worker and wazuh-clusterd to read stopped", func() bool {
		n, _ := m.Health(nil)
		return len(n) == 1 && !w.Connected() && DaemonStates(wh)["wazuh-clusterd"] == "stopped"
	})
	time.Sleep(200 * time.Millisecond)
	if w.Connected() {
		t.Fatal("a dead clusterd reconnected")
	}
}

func TestClusterAPI(t *testing.T) {
	mh := newHome(t, 0)
	m := clusterNode(t, mh, "master", "master-node", "4.9.0", "", "")
	w1 := clusterNode(t, newHome(t, 0), "worker", "worker1", "4.9.0", m.Addr(), t.TempDir())
	w2h := newHome(t, 0)
	w2 := clusterNode(t, w2h, "worker", "worker2", "4.9.0", m.Addr(), t.TempDir())
	waitFor(t, "both workers", func() bool { return w1.Connected() && w2.Connected() })
	f := newAPI(t, 0, func(o *APIOptions) { o.Cluster = m })
	tok := f.login("siem", "siem")
	get := func(path string) (int, map[string]any) {
		t.Helper()
		code, _, b := f.do("GET", path, tok, "")
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return code, v
	}
	items := func(v map[string]any) []any {
		d, _ := v["data"].(map[string]any)
		l, _ := d["affected_items"].([]any)
		return l
	}
	if code, v := get("/cluster/status"); code != 200 || v["data"].(map[string]any)["running"] != "yes" {
		t.Fatalf("status %d %v", code, v)
	}
	if _, v := get("/cluster/nodes?type=worker&sort=-name&select=name"); len(items(v)) != 2 || items(v)[0].(map[string]any)["name"] != "worker2" {
		t.Fatalf("nodes %v", v)
	}
	if _, v := get("/cluster/nodes?nodes_list=worker1,ghost"); v["error"].(float64) != 2 || len(items(v)) != 1 ||
		!strings.Contains(mustJSON(v), `"failed_items":[{"error":{"code":1730,"message":"Node does not exist"},"id":["ghost"]}]`) {
		t.Fatalf("unknown node %v", mustJSON(v))
	}
	if code, v := get("/cluster/nodes?type=boss"); code != 400 {
		t.Fatalf("bad type %d %v", code, v)
	}
	_, v := get("/cluster/healthcheck")
	hc := items(v)
	if len(hc) != 3 || hc[0].(map[string]any)["info"].(map[string]any)["name"] != "master-node" || hc[0].(map[string]any)["status"] != nil ||
		hc[2].(map[string]any)["status"].(map[string]any)["last_keep_alive"] == nil {
		t.Fatalf("healthcheck %v", mustJSON(v))
	}
	if _, v := get("/cluster/local/info"); mustJSON(items(v)) != `[{"cluster":"wazuh","node":"master-node","type":"master"}]` {
		t.Fatalf("local info %v", mustJSON(v))
	}
	// GET /cluster/local/config: the node's <cluster> section, hidden as ossec.conf spells it.
	if code, v := get("/cluster/local/config"); code != 200 || len(items(v)) != 1 {
		t.Fatalf("local config %d %v", code, mustJSON(v))
	} else if c := items(v)[0].(map[string]any); c["name"] != "wazuh" || c["node_name"] != "master-node" || c["node_type"] != "master" ||
		c["hidden"] != "no" || c["disabled"] != false || c["port"] == nil || c["bind_addr"] == nil || c["nodes"] == nil {
		t.Fatalf("local config %v", mustJSON(v))
	}
	// A worker's API forwards to the master; with the master gone it answers 3023.
	wf := newAPI(t, 0, func(o *APIOptions) { o.Cluster = w2 })
	wtok := wf.login("siem", "siem")
	if code, _, b := wf.do("GET", "/cluster/nodes", wtok, ""); code != 200 || !strings.Contains(string(b), `"total_affected_items":3`) {
		t.Fatalf("worker nodes %d %s", code, b)
	}
	m.Close()
	waitFor(t, "the worker to notice", func() bool { return !w2.Connected() })
	if code, _, b := wf.do("GET", "/cluster/healthcheck", wtok, ""); code != 500 || !strings.Contains(string(b), `"error":3023`) {
		t.Fatalf("worker without master %d %s", code, b)
	}
	if code, _, b := wf.do("GET", "/cluster/local/info", wtok, ""); code != 200 || !strings.Contains(string(b), `"node":"worker2"`) {
		t.Fatalf("local info is answered locally %d %s", code, b)
	}
	if code, _, b := wf.do("GET", "/cluster/local/config", wtok, ""); code != 200 || !strings.Contains(string(b), `"node_name":"worker2"`) || !strings.Contains(string(b), `"node_type":"worker"`) {
		t.Fatalf("local config is answered locally %d %s", code, b)
	}
	// Cluster disabled: 3013.
	sf := newAPI(t, 0, nil)
	stok := sf.login("siem", "siem")
	if code, _, b := sf.do("GET", "/cluster/healthcheck", stok, ""); code != 400 || !strings.Contains(string(b), `"error":3013`) {
		t.Fatalf("disabled %d %s", code, b)
	}
	_ = w2h
}

func TestClusterControlList(t *testing.T) {
	mh := newHome(t, 0)
	conf := strings.Replace(string(DefaultOssecConf(1514, 1515, 5514)), "<disabled>yes</disabled>\n  </cluster>", "<disabled>no</disabled>\n  </cluster>", 1)
	conf = strings.Replace(conf, "<node_name>node01</node_name>", "<node_name>master-node</node_name>", 1)
	if err := os.WriteFile(mh.OssecConf(), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if rc := ClusterControl(context.Background(), ToolEnv{Home: mh, Stdout: &out, Stderr: &errb}, []string{"-l"}); rc != 1 || errb.String() != "ERROR: Cluster is not running.\n" {
		t.Fatalf("not running: rc %d %q", rc, errb.String())
	}
	m := clusterNode(t, mh, "master", "master-node", "4.9.0", "", "")
	w := clusterNode(t, newHome(t, 0), "worker", "worker01", "4.9.0", m.Addr(), t.TempDir())
	waitFor(t, "the worker", w.Connected)
	_ = writePidfiles(mh, []string{"wazuh-clusterd"}, os.Getpid())
	out.Reset()
	errb.Reset()
	if rc := ClusterControl(context.Background(), ToolEnv{Home: mh, Stdout: &out, Stderr: &errb}, []string{"-l"}); rc != 0 {
		t.Fatalf("rc %d %s", rc, errb.String())
	}
	want := "NAME         TYPE    VERSION  ADDRESS    \n" +
		"master-node  master  4.9.0    127.0.0.1  \n" +
		"worker01     worker  4.9.0    127.0.0.1  \n"
	if out.String() != want {
		t.Fatalf("cluster_control -l:\n%q\nwant\n%q", out.String(), want)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
