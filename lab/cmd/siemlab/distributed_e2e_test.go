//go:build e2e

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2EDistributed brings up a distributed lab (three indexer nodes, a manager master and
// worker, a dashboard, each its own host) with siemlab as a user does and checks it as an operator
// would: the inventory, siemctl on every host through that host's env, one green cluster of three
// nodes with security, Filebeat on each manager shipping (flow across both managers), the two
// indexer-cluster faults seen in _cluster/health and _cat/shards and healed, and a down that
// leaves nothing behind. One lab for the whole test; the faults one after the other.
func TestE2EDistributed(t *testing.T) {
	l := e2e.Up(t, e2e.Options{Topology: lab.TopologyDistributed, PortOffset: 0})
	ctx := context.Background()
	d, err := lab.OpenDistributed(l.Dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := d.State()
	ca, err := os.ReadFile(filepath.Join(l.Dir, "certs", "root-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	pw := secret(t, filepath.Join(l.Dir, "hosts", "indexer-1"), "indexer")
	var nodeURLs []string
	for _, h := range d.HostsOf(lab.RoleIndexer) {
		nodeURLs = append(nodeURLs, fmt.Sprintf("https://%s:%d", h.Address(), st.Ports.Indexer))
	}
	get := func(t *testing.T, url string, auth bool, v any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if auth {
			req.SetBasicAuth("admin", pw)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if v != nil && resp.StatusCode == 200 {
			if err := json.Unmarshal(body, v); err != nil {
				t.Fatalf("GET %s: %v\n%s", url, err, body)
			}
		}
		return resp.StatusCode
	}
	health := func(t *testing.T, url string) lab.ClusterHealth {
		t.Helper()
		var h lab.ClusterHealth
		if code := get(t, url+"/_cluster/health", true, &h); code != 200 {
			t.Fatalf("%s/_cluster/health: HTTP %d", url, code)
		}
		return h
	}

	t.Run("inventory", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(l.Dir, "inventory.ini"))
		if err != nil {
			t.Fatal(err)
		}
		inv := string(data)
		groups := map[string][]string{}
		var group string
		for _, line := range strings.Split(inv, "\n") {
			switch {
			case strings.HasPrefix(line, "["):
				group = strings.Trim(line, "[]")
			case line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(group, ":"):
				groups[group] = append(groups[group], strings.Fields(line)[0])
			}
		}
		want := map[string]string{"indexer": "indexer-1 indexer-2 indexer-3", "manager": "manager-1 manager-2", "dashboard": "dashboard-1"}
		for g, hosts := range want {
			if got := strings.Join(groups[g], " "); got != hosts {
				t.Errorf("inventory group [%s] = %q, want %q (master first)\n%s", g, got, hosts, inv)
			}
		}
		for _, h := range d.Hosts() {
			if !strings.Contains(inv, "siemlab_env="+h.EnvFile()) {
				t.Errorf("inventory has no siemlab_env for %s", h.Host())
			}
			if _, err := os.Stat(h.EnvFile()); err != nil {
				t.Errorf("host %s: %v", h.Host(), err)
			}
		}
		if !strings.Contains(inv, "manager-1 ") || !regexp.MustCompile(`manager-1 .*node_type=master`).MatchString(inv) {
			t.Errorf("inventory does not name manager-1 the master:\n%s", inv)
		}
	})

	t.Run("siemctl on every host", func(t *testing.T) {
		for _, h := range d.Hosts() {
			hl := l.OnHost(t, h.Host())
			// The host's own units are active, and only those are shown (config components).
			r := hl.Siemctl("services", "status")
			out := r.Stdout + r.Stderr
			if r.Code != 0 || strings.Contains(out, "not-found") {
				t.Errorf("host %s: siemctl services status exit %d:\n%s", h.Host(), r.Code, out)
			}
			for _, u := range h.State().Units {
				if !regexp.MustCompile(regexp.QuoteMeta(u) + `\tactive/running\t`).MatchString(out) {
					t.Errorf("host %s: siemctl services status does not show %s active (exit %d):\n%s", h.Host(), u, r.Code, out)
				}
			}
			r = hl.Siemctl("indexer", "allocation")
			if r.Code != 0 || !strings.Contains(r.Stdout, "all") {
				t.Errorf("host %s: siemctl indexer allocation: exit %d\n%s%s", h.Host(), r.Code, r.Stdout, r.Stderr)
			}
		}
	})

	t.Run("one green cluster with security", func(t *testing.T) {
		for _, u := range nodeURLs {
			if code := get(t, u+"/_cluster/health", false, nil); code != http.StatusUnauthorized {
				t.Errorf("%s without credentials: HTTP %d, want 401", u, code)
			}
			h := health(t, u)
			if h.Status != "green" || h.NumberOfNodes != 3 {
				t.Errorf("%s: cluster %s with %d nodes, want green with 3", u, h.Status, h.NumberOfNodes)
			}
		}
		var nodes []lab.IndexerNode
		get(t, nodeURLs[0]+"/_cat/nodes?format=json&h=name,ip,version,node.role,cluster_manager&s=name", true, &nodes)
		var names []string
		managers := 0
		for _, n := range nodes {
			names = append(names, n.Name+"@"+n.IP)
			if n.ClusterManager == "*" {
				managers++
			}
		}
		if got := strings.Join(names, " "); got != "indexer-1@127.0.0.11 indexer-2@127.0.0.12 indexer-3@127.0.0.13" || managers != 1 {
			t.Errorf("_cat/nodes: %s (%d elected cluster managers)", got, managers)
		}
	})

	t.Run("filebeat on each manager ships", func(t *testing.T) {
		l := l.For(t)
		for _, m := range d.HostsOf(lab.RoleManager) {
			conf, err := os.ReadFile(filepath.Join(m.Root(), l.Profile.Shipper.ConfigFile()))
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range nodeURLs {
				if !strings.Contains(string(conf), `"`+strings.TrimPrefix(u, "https://")+`"`) {
					t.Errorf("%s filebeat.yml does not ship to %s", m.Host(), u)
				}
			}
		}
		l.MustSiemlab("flow", "send", "--tag", "dist1", "--rate", "10", "--for", "6s")
		r := l.Siemlab("flow", "check", "--tag", "dist1", "--wait", "3m", "--json")
		var rep lab.FlowReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Written < 40 || rep.Lost != 0 {
			t.Fatalf("flow check: exit %d (%v)\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}
		for _, m := range d.HostsOf(lab.RoleManager) {
			alerts, err := os.ReadFile(filepath.Join(m.Root(), l.Profile.AlertsFile()))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(alerts), "dist1-"); n < 20 {
				t.Errorf("%s wrote %d of the flow's alerts, want about half", m.Host(), n)
			}
		}
		t.Logf("%s", rep)
	})

	t.Run("indexer-node-down", func(t *testing.T) {
		l := l.For(t)
		l.MustSiemlab("fault", "indexer-node-down:indexer-2")
		h := health(t, nodeURLs[0])
		if h.NumberOfNodes != 2 {
			t.Errorf("with indexer-2 down: %d nodes, want 2", h.NumberOfNodes)
		}
		var nodes []lab.IndexerNode
		get(t, nodeURLs[2]+"/_cat/nodes?format=json&h=name", true, &nodes)
		for _, n := range nodes {
			if n.Name == "indexer-2" {
				t.Errorf("_cat/nodes still lists indexer-2 while its unit is stopped")
			}
		}
		if !strings.Contains(faultsOf(t, l.Dir), "indexer-node-down:indexer-2") {
			t.Errorf("lab.json does not record the fault")
		}
		l.MustSiemlab("heal", "indexer-node-down:indexer-2")
		if h := health(t, nodeURLs[1]); h.Status != "green" || h.NumberOfNodes != 3 {
			t.Errorf("after heal: %s with %d nodes, want green with 3", h.Status, h.NumberOfNodes)
		}
	})

	t.Run("replica-unassigned", func(t *testing.T) {
		l := l.For(t)
		l.MustSiemlab("fault", "replica-unassigned")
		h := health(t, nodeURLs[0])
		if h.Status != "yellow" || h.UnassignedShards == 0 {
			t.Errorf("replica-unassigned: %s with %d unassigned shards, want yellow with some", h.Status, h.UnassignedShards)
		}
		var shards []struct {
			Index, Prirep, State string
		}
		get(t, nodeURLs[0]+"/_cat/shards/siem-lab-replicas?format=json&h=index,prirep,state", true, &shards)
		unassigned := 0
		for _, s := range shards {
			if s.Prirep == "r" && s.State == "UNASSIGNED" {
				unassigned++
			}
		}
		if unassigned != 1 {
			t.Errorf("_cat/shards siem-lab-replicas: %+v, want exactly one UNASSIGNED replica", shards)
		}
		r := l.OnHost(t, "manager-2").Siemctl("indexer", "shards", "--unassigned")
		if !strings.Contains(r.Stdout, "siem-lab-replicas") {
			t.Errorf("siemctl indexer shards --unassigned on manager-2 does not name siem-lab-replicas: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("heal", "replica-unassigned")
		if h := health(t, nodeURLs[2]); h.Status != "green" || h.UnassignedShards != 0 {
			t.Errorf("after heal: %s with %d unassigned shards", h.Status, h.UnassignedShards)
		}
		if f := faultsOf(t, l.Dir); f != "" {
			t.Errorf("faults left after heals: %s", f)
		}
	})

	t.Run("status and memory", func(t *testing.T) {
		l := l.For(t)
		r := l.MustSiemlab("status", "--json")
		var s lab.DistStatus
		if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Hosts) != 6 || s.Cluster == nil || s.Cluster.Status != "green" || len(s.Nodes) != 3 {
			t.Errorf("status: %d hosts, cluster %+v, %d nodes", len(s.Hosts), s.Cluster, len(s.Nodes))
		}
		for _, h := range s.Hosts {
			for _, u := range h.Units {
				if u.ActiveState != "active" {
					t.Errorf("host %s: unit %s %s/%s", h.Host, u.Name, u.ActiveState, u.SubState)
				}
			}
		}
		t.Logf("distributed lab: %d processes, %d MiB RSS", s.Processes, s.MemoryRSS>>20)
		if s.MemoryRSS > 6<<30 {
			t.Errorf("the lab takes %d MiB RSS, more than 6 GiB", s.MemoryRSS>>20)
		}
	})

	t.Run("down leaves nothing", func(t *testing.T) {
		l := l.For(t)
		l.MustSiemlab("down")
		for _, h := range d.Hosts() {
			id := lab.LabID(h.Dir())
			for _, c := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"} {
				if _, err := os.Stat(filepath.Join(c, "lab-"+id)); err == nil {
					t.Errorf("host %s: cgroup %s/lab-%s left", h.Host(), c, id)
				}
			}
			if _, err := os.Stat(filepath.Join(h.Dir(), "lab.json")); err == nil {
				t.Errorf("host %s: lab.json left", h.Host())
			}
		}
		if _, err := os.Stat(filepath.Join(l.Dir, "lab.json")); err == nil {
			t.Errorf("lab.json left")
		}
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		if strings.Contains(string(mounts), l.Dir) {
			t.Errorf("mounts under %s left", l.Dir)
		}
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if cmd, err := os.ReadFile(p); err == nil && strings.Contains(string(cmd), l.Dir+"/") {
				t.Errorf("process %s left: %s", filepath.Dir(p), strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
	})
}

// faultsOf reads the active faults recorded in DIR/lab.json.
func faultsOf(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "lab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st lab.State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return strings.Join(st.Faults, ",")
}
