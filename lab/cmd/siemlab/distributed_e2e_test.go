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
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2EDistributed brings up a distributed lab (three indexer nodes, a manager master and
// worker, a dashboard, each its own host) with siemlab as a user does, in the profile of
// SIEMCTL_E2E_PROFILE (CI: wazuh), and checks it as an operator would: the inventory, one green
// cluster of three nodes with security, siemctl on every host through that host's env file
// (health --cluster and the full health OK everywhere, services status of the host's own units),
// Filebeat on each manager shipping (flow across both managers), then each fault a distributed site
// meets, one after the other: the check that names the node goes non-OK, the fix health prints is
// followed on the host it names, health is OK again; and a down that leaves nothing behind. One lab
// for the whole test (a distributed lab is ~2.4 GiB and minutes of start).
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

	hosts := []string{"indexer-1", "indexer-2", "indexer-3", "manager-1", "manager-2", "dashboard-1"}
	// onHost runs a shell script on a host as its operator would: with the host's env file sourced
	// (D/hosts/<host>/env: siemctl.yaml, apt and dpkg of that host) and siemctl on PATH.
	onHost := func(t *testing.T, host, script string) e2e.Result {
		t.Helper()
		return l.For(t).Shell(host, script)
	}
	healthOn := func(t *testing.T, host string, args ...string) e2e.Result {
		t.Helper()
		return onHost(t, host, "siemctl health --timeout 30s "+strings.Join(args, " "))
	}
	// untilSays runs health on host until it exits with code and says want (a node joining, a worker
	// reconnecting or logging why it cannot).
	untilSays := func(t *testing.T, host string, code int, want string, within time.Duration, args ...string) e2e.Result {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			r := healthOn(t, host, args...)
			if (r.Code == code && strings.Contains(r.Stdout, want)) || time.Now().After(deadline) {
				return r
			}
			time.Sleep(3 * time.Second)
		}
	}
	until := func(t *testing.T, host string, code int, within time.Duration, args ...string) e2e.Result {
		t.Helper()
		return untilSays(t, host, code, "", within, args...)
	}
	// healthyEverywhere waits until the full health is OK on every host.
	healthyEverywhere := func(t *testing.T, within time.Duration) {
		t.Helper()
		for _, h := range hosts {
			if r := until(t, h, 0, within); r.Code != 0 {
				t.Errorf("%s: health exit %d\n%s%s", h, r.Code, r.Stdout, r.Stderr)
			}
		}
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

	t.Run("health --cluster OK from every host", func(t *testing.T) {
		for _, h := range hosts {
			r := until(t, h, 0, 2*time.Minute, "--cluster")
			if r.Code != 0 {
				t.Errorf("%s: health --cluster exit %d\n%s%s", h, r.Code, r.Stdout, r.Stderr)
				continue
			}
			for _, want := range []string{"indexer cluster: OK   3 node(s)", "manager cluster: OK   2 node(s) connected",
				"  indexer-1: ", "  indexer-2: ", "  indexer-3: ", "(elected cluster manager)", "  manager-1: master ", "  manager-2: worker "} {
				if !strings.Contains(r.Stdout, want) {
					t.Errorf("%s: health --cluster lacks %q:\n%s", h, want, r.Stdout)
				}
			}
		}
		t.Logf("health --cluster on manager-1:\n%s", healthOn(t, "manager-1", "--cluster").Stdout)
	})

	// The master holds every agent of the cluster, as its global.db does: the manager nodes seed
	// disjoint agents (manager-1 001-005, manager-2 006-010), the worker's reach the master's database
	// by the agent-info sync with the worker as their node and its host as their manager, and the
	// healthcheck counts each node's own active agents (3 and 2), which add up to the cluster's 5.
	t.Run("the cluster's agents on the master", func(t *testing.T) {
		type agentRow struct {
			ID, Status, Manager string
			Node                string `json:"node_name"`
		}
		var rows []agentRow
		deadline := time.Now().Add(90 * time.Second) // agent-info syncs every 10 s
		for {
			r := onHost(t, "manager-1", "siemctl agents list -o json")
			if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rows) != nil {
				t.Fatalf("agents list on the master: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if len(rows) == 11 || time.Now().After(deadline) {
				break
			}
			time.Sleep(3 * time.Second)
		}
		if len(rows) != 11 {
			t.Fatalf("the master lists %d agents, want 000 and 001-010 (the worker's 006-010 by agent-info sync): %+v", len(rows), rows)
		}
		// agents show gives each agent's manager (agents list leaves it out).
		var ids []string
		for _, a := range rows {
			ids = append(ids, a.ID)
		}
		r := onHost(t, "manager-1", "for id in "+strings.Join(ids, " ")+"; do siemctl agents show $id -o json || exit 1; done")
		if r.Code != 0 {
			t.Fatalf("agents show on the master: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		dec := json.NewDecoder(strings.NewReader(r.Stdout))
		active := map[string]int{}
		for range ids {
			var a agentRow
			if err := dec.Decode(&a); err != nil {
				t.Fatalf("agents show on the master: %v\n%s", err, r.Stdout)
			}
			node := "manager-1"
			if a.ID >= "006" {
				node = "manager-2"
			}
			switch {
			case a.Status == "never_connected":
				if a.Node != "unknown" || a.Manager != "" {
					t.Errorf("agent %s (never connected): node_name %q manager %q", a.ID, a.Node, a.Manager)
				}
			case a.Node != node || a.Manager != node:
				t.Errorf("agent %s on the master: node_name %q manager %q, want %s on %s", a.ID, a.Node, a.Manager, node, node)
			}
			if a.Status == "active" && a.ID != "000" {
				active[a.Node]++
			}
		}
		if active["manager-1"] != 3 || active["manager-2"] != 2 {
			t.Errorf("active agents on the master's list by node: %v, want manager-1 3 and manager-2 2", active)
		}
		for _, h := range []string{"manager-1", "manager-2", "indexer-1"} {
			r := onHost(t, h, "siemctl health --cluster --timeout 30s -o json")
			var rep struct {
				Checks []struct {
					ID      string             `json:"id"`
					Summary string             `json:"summary"`
					Metrics map[string]float64 `json:"metrics"`
				} `json:"checks"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 {
				t.Errorf("%s: health --cluster -o json exit %d (%v)\n%s%s", h, r.Code, err, r.Stdout, r.Stderr)
				continue
			}
			found := false
			for _, c := range rep.Checks {
				if c.ID != "manager.cluster" {
					continue
				}
				found = true
				m := c.Metrics
				if m["active_agents.manager-1"] != float64(active["manager-1"]) || m["active_agents.manager-2"] != float64(active["manager-2"]) ||
					m["active_agents"] != float64(active["manager-1"]+active["manager-2"]) || !strings.HasSuffix(c.Summary, ", 5 active agent(s)") {
					t.Errorf("%s: manager.cluster %q %v, want each node's own active agents (%v) adding up to 5", h, c.Summary, m, active)
				}
			}
			if !found {
				t.Errorf("%s: health --cluster has no manager.cluster:\n%s", h, r.Stdout)
			}
		}
		// The master's database is where wazuh-db keeps global.db: siemctl's cold copy of queue/db holds it.
		l := l.For(t)
		m, err := d.Host("manager-1")
		if err != nil {
			t.Fatal(err)
		}
		db, err := os.ReadFile(filepath.Join(m.Root(), l.Profile.InstallDir, "queue/db/global.db"))
		if err != nil || !strings.Contains(string(db), `"node_name":"manager-2"`) || strings.Count(string(db), "\n") != 11 {
			t.Errorf("the master's queue/db/global.db (%v) does not hold the cluster's 11 agents:\n%s", err, db)
		}
	})

	// Each host's siemctl.yaml names the components it runs (components): the full health judges
	// this host's units, ports and packages and the deployment through the cluster checks and the
	// APIs it reaches; services status shows this host's units, active.
	t.Run("full health OK and services status on every host", func(t *testing.T) {
		runs := map[string]string{"indexer": "indexer", "manager": "manager, shipper", "dashboard": "dashboard"}
		for _, h := range hosts {
			comps := runs[strings.SplitN(h, "-", 2)[0]]
			r := until(t, h, 0, 2*time.Minute, "-o", "json")
			var rep struct {
				Verdict string `json:"verdict"`
				Checks  []struct {
					ID       string   `json:"id"`
					Status   string   `json:"status"`
					Evidence []string `json:"evidence"`
				} `json:"checks"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Verdict != "OK" {
				t.Errorf("%s: health exit %d verdict %q (%v)\n%s%s", h, r.Code, rep.Verdict, err, r.Stdout, r.Stderr)
				continue
			}
			ids := map[string]bool{}
			for _, c := range rep.Checks {
				ids[c.ID] = true
				if c.ID == "units" || c.ID == "ports" || c.ID == "versions" {
					if ev := strings.Join(c.Evidence, "\n"); !strings.Contains(ev, "not on this host (components: "+comps+")") {
						t.Errorf("%s: %s does not say what is not on this host:\n%s", h, c.ID, ev)
					}
				}
			}
			for _, id := range []string{"units", "ports", "versions", "indexer.api", "indexer.cluster", "manager.api", "manager.cluster", "alerts.flow", "dashboard"} {
				if !ids[id] {
					t.Errorf("%s: health has no %s check", h, id)
				}
			}
			if ids["shipper"] != strings.Contains(comps, "shipper") {
				t.Errorf("%s: shipper check present %v, runs %s", h, ids["shipper"], comps)
			}
			s := onHost(t, h, "siemctl services status")
			if s.Code != 0 || strings.Contains(s.Stdout, "not-found") {
				t.Errorf("%s: services status exit %d\n%s%s", h, s.Code, s.Stdout, s.Stderr)
			}
			for _, c := range strings.Split(comps, ", ") {
				if !strings.Contains(s.Stdout, c+"\t") {
					t.Errorf("%s: services status does not list %s:\n%s", h, c, s.Stdout)
				}
			}
			hd, err := d.Host(h)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range hd.State().Units {
				if !regexp.MustCompile(regexp.QuoteMeta(u) + `\tactive/running\t`).MatchString(s.Stdout) {
					t.Errorf("%s: services status does not show %s active:\n%s", h, u, s.Stdout)
				}
			}
			if r := onHost(t, h, "siemctl indexer allocation"); r.Code != 0 || !strings.Contains(r.Stdout, "all") {
				t.Errorf("%s: siemctl indexer allocation: exit %d\n%s%s", h, r.Code, r.Stdout, r.Stderr)
			}
		}
		// A component this host does not run is refused by name (exit 2), naming what runs here.
		if r := onHost(t, "indexer-1", "siemctl services restart manager --yes"); r.Code != 2 || !strings.Contains(r.Stderr, "manager not on this host: it runs indexer (the components key") {
			t.Errorf("services restart manager on indexer-1: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("health on indexer-2:\n%s", healthOn(t, "indexer-2").Stdout)
	})

	// A snapshot on each host records the components that host runs (its components key), all up.
	t.Run("snapshot of each host has its components", func(t *testing.T) {
		runs := map[string]string{"indexer": "indexer", "manager": "manager shipper", "dashboard": "dashboard"}
		for _, h := range hosts {
			r := onHost(t, h, "siemctl snapshot capture --label dist -o json")
			var res struct {
				Path    string `json:"path"`
				Summary struct {
					Up    int `json:"components_up"`
					Total int `json:"components_total"`
				} `json:"summary"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || r.Code != 0 {
				t.Errorf("%s: snapshot capture exit %d (%v)\n%s%s", h, r.Code, err, r.Stdout, r.Stderr)
				continue
			}
			var doc struct {
				Components map[string]json.RawMessage `json:"components"`
			}
			if b, err := os.ReadFile(res.Path); err != nil || json.Unmarshal(b, &doc) != nil {
				t.Errorf("%s: snapshot %s: %v", h, res.Path, err)
				continue
			}
			var got []string
			for c := range doc.Components {
				got = append(got, c)
			}
			slices.Sort(got)
			want := runs[strings.SplitN(h, "-", 2)[0]]
			if strings.Join(got, " ") != want || res.Summary.Up != res.Summary.Total || res.Summary.Total != len(got) {
				t.Errorf("%s: snapshot components %v (%d/%d up), want %s all up", h, got, res.Summary.Up, res.Summary.Total, want)
			}
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

	// The agents of both managers upgraded through the master: the worker's agents (ids 021–040,
	// synced to the master) by their node's share, forwarded by the master to the worker; then, with
	// the worker cut from the master, the master's share upgrades and only the worker's waits, named
	// with 3022, until resume after the fix sends it.
	t.Run("agent upgrade through the master", func(t *testing.T) {
		l := l.For(t)
		managers := d.HostsOf(lab.RoleManager)
		type agentRow struct {
			ID, Status, Version string
			Node                string `json:"node_name"`
		}
		homes := map[string]string{}
		for _, m := range managers {
			home := filepath.Join(m.Root(), l.Profile.InstallDir)
			homes[m.Host()] = home
			db := filepath.Join(home, "queue/db/global.db")
			saved, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			conf := filepath.Join(home, "etc/ossec.conf")
			b, err := os.ReadFile(conf)
			if err != nil {
				t.Fatal(err)
			}
			i := strings.LastIndex(string(b), "</ossec_config>")
			if i < 0 {
				t.Fatalf("%s: no </ossec_config>", conf)
			}
			timing := "  <emulator>\n    <upgrade_send_time>1s</upgrade_send_time>\n    <upgrade_restart_time>2s</upgrade_restart_time>\n    <upgrade_task_timeout>60s</upgrade_task_timeout>\n  </emulator>\n"
			if err := os.WriteFile(conf, []byte(string(b[:i])+timing+string(b[i:])), 0o640); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.WriteFile(conf, b, 0o640); _ = os.WriteFile(db, saved, 0o640) })
		}
		vb, err := os.ReadFile(filepath.Join(homes["manager-1"], "VERSION"))
		if err != nil {
			t.Fatal(err)
		}
		mv := "v" + strings.TrimPrefix(strings.TrimSpace(string(vb)), "v") // the target: the manager's version
		// 20 agents on each manager, the worker's after the master's (agent ids are the cluster's).
		reseed := func(t *testing.T) {
			t.Helper()
			for host, from := range map[string]string{"manager-1": "1", "manager-2": "21"} {
				out, err := exec.Command(filepath.Join(homes[host], "bin/siem-managerd"), "--home", homes[host], "--seed-agents", "20", "--seed-from", from, "--reseed", "--seed-only").CombinedOutput()
				if err != nil {
					t.Fatalf("reseed %s: %v %s", host, err, out)
				}
			}
		}
		masterAgents := func(t *testing.T) map[string]agentRow {
			t.Helper()
			r := onHost(t, "manager-1", "siemctl agents list -o json")
			var rows []agentRow
			if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &rows) != nil {
				t.Fatalf("agents list on the master: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			out := map[string]agentRow{}
			for _, a := range rows {
				out[a.ID] = a
			}
			return out
		}
		// untilMaster waits until the master's agents satisfy ok (agent-info syncs every 10 s).
		untilMaster := func(t *testing.T, what string, ok func(map[string]agentRow) bool) map[string]agentRow {
			t.Helper()
			deadline := time.Now().Add(90 * time.Second)
			for {
				a := masterAgents(t)
				if ok(a) {
					return a
				}
				if time.Now().After(deadline) {
					t.Fatalf("the master never showed %s: %+v", what, a)
				}
				time.Sleep(3 * time.Second)
			}
		}
		freshWorker := func(a map[string]agentRow) bool {
			w, ok := a["022"]
			return ok && w.Node == "manager-2" && a["040"].Node == "manager-2" && w.Version != "" && !strings.HasSuffix(a["035"].Version, mv)
		}
		type runReport struct {
			State    string `json:"state"`
			Reason   string `json:"reason"`
			Requests int    `json:"requests"`
			Agents   map[string]struct {
				State   string `json:"state"`
				Node    string `json:"node"`
				Failure *struct {
					Code  int    `json:"code"`
					Cause string `json:"cause"`
				} `json:"failure"`
			} `json:"agents"`
			Report struct {
				Waves []struct {
					Wave     int      `json:"wave"`
					Upgraded []string `json:"upgraded"`
					Gate     struct {
						Verdict string `json:"verdict"`
					} `json:"gate"`
				} `json:"waves"`
			} `json:"report"`
		}
		upgradeOn := func(t *testing.T, args string) runReport {
			t.Helper()
			r := onHost(t, "manager-1", "siemctl agents upgrade "+args+" --poll 2s --yes -o json")
			var rep runReport
			if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 {
				t.Fatalf("agents upgrade %s: exit %d (%v)\n%s%s", args, r.Code, err, r.Stdout, r.Stderr)
			}
			return rep
		}
		byNode := func(rep runReport) map[string]map[string]int {
			out := map[string]map[string]int{}
			for _, a := range rep.Agents {
				if out[a.Node] == nil {
					out[a.Node] = map[string]int{}
				}
				out[a.Node][a.State]++
			}
			return out
		}

		reseed(t)
		untilMaster(t, "the worker's agents 021–040", freshWorker)
		rep := upgradeOn(t, "apply --canary 1 --waves 50%,100% --agent-wait 2m")
		n := byNode(rep)
		if rep.State != "done" || n["manager-2"]["upgraded"] == 0 || n["manager-1"]["upgraded"] == 0 || n["manager-1"]["failed"]+n["manager-2"]["failed"] != 0 {
			t.Fatalf("upgrade through the master: %s %s %v", rep.State, rep.Reason, n)
		}
		for _, w := range rep.Report.Waves {
			if w.Gate.Verdict != "go" {
				t.Errorf("wave %d: gate %s", w.Wave, w.Gate.Verdict)
			}
		}
		// The master's listing agrees: the worker's active agents are at the manager's version.
		untilMaster(t, "the worker's agents upgraded", func(a map[string]agentRow) bool {
			for _, r := range a {
				if r.Node == "manager-2" && r.Status == "active" && !strings.HasSuffix(r.Version, mv) {
					return false
				}
			}
			return true
		})
		t.Logf("through the master: %v, %d requests", n, rep.Requests)

		// The worker cut from the master: only its share waits, named with 3022.
		reseed(t)
		untilMaster(t, "the worker's agents 021–040 again", freshWorker)
		l.MustSiemlab("fault", "worker-disconnected")
		healed := false
		defer func() {
			if !healed {
				l.Siemlab("heal", "worker-disconnected")
			}
		}()
		rep = upgradeOn(t, "apply --canary 1 --waves 100% --agent-wait 2m")
		n = byNode(rep)
		if rep.State != "done" || n["manager-1"]["upgraded"] == 0 || n["manager-2"]["upgraded"] != 0 || n["manager-2"]["pending"] == 0 ||
			!strings.Contains(rep.Reason, "of node manager-2, not connected to the master (3022)") {
			t.Fatalf("worker cut: %s %s %v", rep.State, rep.Reason, n)
		}
		for id, a := range rep.Agents {
			if a.Node == "manager-2" && a.State == "pending" && a.Failure != nil && (a.Failure.Code != 3022 || !strings.Contains(a.Failure.Cause, "manager-2")) {
				t.Errorf("%s: %+v", id, a.Failure)
			}
		}
		// The fix health names, then resume sends the worker's share through the master.
		l.MustSiemlab("heal", "worker-disconnected")
		healed = true
		if r := until(t, "manager-1", 0, 2*time.Minute, "--check", "manager.cluster"); r.Code != 0 {
			t.Fatalf("the worker back: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		rep = upgradeOn(t, "resume") // the run keeps its --agent-wait
		n = byNode(rep)
		if rep.State != "done" || n["manager-2"]["upgraded"] == 0 || n["manager-1"]["failed"]+n["manager-2"]["failed"] != 0 {
			t.Fatalf("resume after the worker is back: %s %s %v", rep.State, rep.Reason, n)
		}
		t.Logf("cut and resumed: %v, %d requests", n, rep.Requests)
	})

	t.Run("worker-disconnected", func(t *testing.T) {
		l := l.For(t)
		l.MustSiemlab("fault", "worker-disconnected")
		r := healthOn(t, "manager-1", "--check", "manager.cluster")
		if r.Code != 2 || !strings.Contains(r.Stdout, "manager-2 not connected to the master (1/2 nodes connected)") {
			t.Errorf("master: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = untilSays(t, "manager-2", 2, "wazuh-clusterd is stopped on this worker", 30*time.Second, "--check", "manager.cluster")
		if r.Code != 2 || !strings.Contains(r.Stdout, "wazuh-clusterd is stopped on this worker") || !strings.Contains(r.Stdout, "siemctl services restart manager") {
			t.Fatalf("worker: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		// The fix it prints, on the worker.
		if r := onHost(t, "manager-2", "siemctl services restart manager --yes"); r.Code != 0 {
			t.Fatalf("services restart manager: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := until(t, "manager-1", 0, 2*time.Minute, "--check", "manager.cluster"); r.Code != 0 {
			t.Errorf("after the fix: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("heal", "worker-disconnected")
	})

	t.Run("indexer-node-down", func(t *testing.T) {
		l := l.For(t)
		l.MustSiemlab("fault", "indexer-node-down:indexer-2")
		if h := health(t, nodeURLs[0]); h.NumberOfNodes != 2 {
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
		r := healthOn(t, "manager-1", "--check", "indexer.cluster")
		if r.Code != 2 || !strings.Contains(r.Stdout, "node(s) missing: indexer-2 (2/3 in the cluster)") ||
			!strings.Contains(r.Stdout, "on indexer-2: siemctl services start indexer") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		// The fix it prints, on the host it names. On a loaded machine the JVM may not answer within
		// the start's minute: the failure then says it is still starting, and its fix (health again in
		// a minute) is what the wait below does.
		if r := onHost(t, "indexer-2", "siemctl services start indexer --yes"); r.Code != 0 &&
			!(r.Code == 5 && strings.Contains(r.Stderr, "is still starting") && strings.Contains(r.Stderr, "siemctl health again in a minute")) {
			t.Fatalf("services start indexer: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		// A JVM rejoining on a loaded machine takes minutes.
		if r := until(t, "indexer-1", 0, 10*time.Minute, "--check", "indexer.cluster"); r.Code != 0 {
			t.Errorf("after the fix: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
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
		r := healthOn(t, "manager-2", "--check", "indexer.health", "-o", "json") // the evidence names the unassigned replica
		if r.Code != 1 || !strings.Contains(r.Stdout, "replicas unassigned on a multi-node cluster") || !strings.Contains(r.Stdout, "unassigned replica siem-lab-replicas[0]") {
			t.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := onHost(t, "manager-2", "siemctl indexer shards --unassigned"); !strings.Contains(r.Stdout, "siem-lab-replicas") {
			t.Errorf("siemctl indexer shards --unassigned on manager-2 does not name siem-lab-replicas: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("heal", "replica-unassigned")
		if r := until(t, "manager-2", 0, 2*time.Minute, "--check", "indexer.health"); r.Code != 0 {
			t.Errorf("after heal: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if h := health(t, nodeURLs[2]); h.Status != "green" || h.UnassignedShards != 0 {
			t.Errorf("after heal: %s with %d unassigned shards", h.Status, h.UnassignedShards)
		}
	})

	// Last of the faults: following its fix leaves both managers on the lab's newer release.
	t.Run("worker-version-mismatch", func(t *testing.T) {
		l := l.For(t)
		pkg := l.Profile.Manager
		l.MustSiemlab("fault", "worker-version-mismatch")
		if r := onHost(t, "manager-2", "dpkg-query --admindir=\"$DPKG_ROOT/var/lib/dpkg\" -W -f='${Version}' "+pkg); r.Stdout != "4.10.0-1" {
			t.Fatalf("the worker's %s after the fault: %q %s (want the lab's other release, 4.10.0-1)", pkg, r.Stdout, r.Stderr)
		}
		r := untilSays(t, "manager-2", 2, "(3031)", time.Minute, "--check", "manager.cluster")
		if !strings.Contains(r.Stdout, "this worker is refused by its master: versions differ (3031)") || !strings.Contains(r.Stdout, "this worker runs "+pkg+" 4.10.0-1") {
			t.Fatalf("worker: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		workerFix := r.Stdout
		r = healthOn(t, "manager-1", "--cluster")
		if r.Code != 2 || !strings.Contains(r.Stdout, "manager-2 not connected to the master") || !strings.Contains(r.Stdout, "3031") {
			t.Errorf("master: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		// The master's line names its version: the older of the two here, so the fix runs there.
		m := regexp.MustCompile(`manager-1: master (\S+),`).FindStringSubmatch(r.Stdout)
		if m == nil || m[1] != "4.9.0" {
			t.Fatalf("health --cluster on the master does not name its version 4.9.0:\n%s", r.Stdout)
		}
		cmd := regexp.MustCompile(`if the master is older, on the master: (.+?), then (siemctl services restart manager);`).FindStringSubmatch(workerFix)
		if cmd == nil {
			t.Fatalf("the worker's fix names no command for an older master:\n%s", workerFix)
		}
		for _, c := range []string{cmd[1], cmd[2] + " --yes"} {
			if r := onHost(t, "manager-1", c); r.Code != 0 {
				t.Fatalf("on manager-1: %s: exit %d\n%s%s", c, r.Code, r.Stdout, r.Stderr)
			}
		}
		if r := until(t, "manager-2", 0, 2*time.Minute, "--check", "manager.cluster"); r.Code != 0 {
			t.Errorf("after the fix: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		healthyEverywhere(t, 2*time.Minute)
		if r := healthOn(t, "manager-1", "--cluster"); !strings.Contains(r.Stdout, "manager-1: master 4.10.0,") || !strings.Contains(r.Stdout, "manager-2: worker 4.10.0,") {
			t.Errorf("after the fix, both managers on 4.10.0:\n%s", r.Stdout)
		}
		// Both agree already: heal has nothing to install.
		l.MustSiemlab("heal", "worker-version-mismatch")
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

	// siemlab load fills the distributed lab's indexer cluster through its first indexer host.
	t.Run("load on a distributed lab", func(t *testing.T) {
		l := l.For(t)
		r := l.MustSiemlab("load", "--days", "2", "--size", "256KiB", "--json")
		var rep struct {
			Docs    int `json:"docs"`
			Indices int `json:"indices"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || rep.Docs == 0 || rep.Indices != 2 {
			t.Errorf("siemlab load: %v\n%s", err, r.Stdout)
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
