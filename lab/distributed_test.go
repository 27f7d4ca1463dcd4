package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/lab/emu/dashboard"
	"github.com/siemctl/siemctl/lab/emu/manager"
)

// A single lab binds every address (0.0.0.0) on the wazuh profile's agent, enrollment, syslog,
// API and dashboard ports, 443-6515 and 55000-60000 over offsets 0-5000: no distributed port may
// fall there (its own addresses keep it off the single labs' 127.0.0.1 ports).
func TestDistPortsAvoidSingleLabs(t *testing.T) {
	for _, name := range ProfileNames() {
		p := Profiles[name]
		for _, off := range []int{0, 500, 4900, 5000} {
			dp := p.DistPorts(off)
			for _, port := range []int{dp.Indexer, dp.Transport, dp.API, dp.Agent, dp.Enrollment, dp.Syslog, dp.Dashboard, dp.Cluster} {
				if (port >= 443 && port <= 6515) || (port >= 55000 && port <= 60000) || port > 65535 {
					t.Errorf("%s offset %d: port %d is in a single lab's range", name, off, port)
				}
			}
		}
	}
}

// Two distributed labs share the hosts' addresses: their ports must differ (offsets 0 and 500, the
// two this project's tests use, and any two offsets 100 apart).
func TestDistPortsOfTwoLabsDiffer(t *testing.T) {
	for _, name := range ProfileNames() {
		p := Profiles[name]
		list := func(o int) []int {
			dp := p.DistPorts(o)
			return []int{dp.Indexer, dp.Transport, dp.API, dp.Agent, dp.Enrollment, dp.Syslog, dp.Dashboard, dp.Cluster}
		}
		for _, pair := range [][2]int{{0, 500}, {0, 100}, {400, 500}, {0, 1000}} {
			seen := map[int]bool{}
			for _, port := range list(pair[0]) {
				seen[port] = true
			}
			for _, port := range list(pair[1]) {
				if seen[port] && port != p.DistPorts(pair[1]).Syslog { // syslog is UDP, the others TCP
					t.Errorf("%s: offsets %d and %d both use port %d", name, pair[0], pair[1], port)
				}
			}
		}
	}
}

func testHost(t *testing.T, prof Profile, name string) *Lab {
	t.Helper()
	var h DistHost
	for _, x := range DistHosts {
		if x.Name == name {
			h = x
		}
	}
	dir := t.TempDir()
	ports := prof.DistPorts(0)
	return &Lab{core: core{st: &State{Dir: dir, Root: filepath.Join(dir, "root"), Ports: ports, Host: h.Name, Address: h.Address,
		Components: roleComponents[h.Role], IndexerURLs: []string{"https://127.0.0.11:29200", "https://127.0.0.12:29200", "https://127.0.0.13:29200"}},
		prof: prof}, cluster: &hostPlan{DistHost: h, all: DistHosts, clusterName: "wazuh-manager-cluster", clusterKey: "0123456789abcdef0123456789abcdef"}}
}

// configureHost gives each manager its remotes on its address and the real <cluster> section (the
// worker naming the master), in a file the emulator's own parser accepts, and the dashboard every
// indexer node.
func TestConfigureHost(t *testing.T) {
	for _, name := range ProfileNames() {
		prof := Profiles[name]
		for _, host := range []string{"manager-1", "manager-2"} {
			l := testHost(t, prof, host)
			p := l.st.Ports
			conf := manager.DefaultOssecConf(p.Agent, p.Enrollment, p.Syslog)
			if name == "wazuh" {
				conf = manager.StockOssecConf(manager.StockOptions{AgentPort: p.Agent, EnrollmentPort: p.Enrollment, IndexerPort: p.Indexer, Root: l.st.Root, SyslogPort: p.Syslog})
			}
			if err := writeFile(filepath.Join(l.managerDir(), "etc/ossec.conf"), conf, 0o640); err != nil {
				t.Fatal(err)
			}
			if err := writeFile(filepath.Join(l.managerDir(), "api/configuration/api.yaml"), manager.DefaultAPIYAML("0.0.0.0", p.API), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := l.configureHost(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(filepath.Join(l.managerDir(), "etc/ossec.conf"))
			c, err := manager.ParseConfig(data)
			if err != nil {
				t.Fatalf("%s %s: the emulator rejects the ossec.conf: %v\n%s", name, host, err, data)
			}
			if len(c.Remotes) != 2 {
				t.Errorf("%s %s: %d remotes, want the agents' and syslog's", name, host, len(c.Remotes))
			}
			for _, r := range c.Remotes {
				if r.LocalIP != l.st.Address {
					t.Errorf("%s %s: remote on %q, want %s", name, host, r.LocalIP, l.st.Address)
				}
			}
			s := string(data)
			typ := map[string]string{"manager-1": "master", "manager-2": "worker"}[host]
			for _, want := range []string{"<node_name>" + host + "</node_name>", "<node_type>" + typ + "</node_type>", "<node>127.0.0.21</node>",
				"<bind_addr>" + l.st.Address + "</bind_addr>", "<port>21516</port>", "<disabled>no</disabled>", "<key>0123456789abcdef0123456789abcdef</key>"} {
				if !strings.Contains(s, want) {
					t.Errorf("%s %s: ossec.conf lacks %s", name, host, want)
				}
			}
			if n := strings.Count(s, "<cluster>"); n != 1 {
				t.Errorf("%s %s: %d <cluster> sections", name, host, n)
			}
			if name == "wazuh" && (strings.Count(s, "<host>https://127.0.0.1:") != 0 || strings.Count(s, "<host>") != 3) {
				t.Errorf("%s %s: <indexer> still names 127.0.0.1", name, host)
			}
			api, err := manager.LoadAPIConfig(filepath.Join(l.managerDir(), "api/configuration/api.yaml"))
			if err != nil || api.HostAddr() != l.st.Address {
				t.Errorf("%s %s: api.yaml host: %v %v", name, host, api, err)
			}
			// The manager calls itself by the host's name (its agents' manager on the master's list).
			if got := (manager.Home{Dir: l.managerDir()}).Hostname(); got != host {
				t.Errorf("%s %s: the manager's hostname is %q", name, host, got)
			}
		}
		l := testHost(t, prof, "dashboard-1")
		conf := dashboard.DefaultConfig("/certs", l.st.Ports.Dashboard, 29200)
		if name == "wazuh" {
			conf = dashboard.StockConfig("/certs", l.st.Ports.Dashboard, 29200)
		}
		path := filepath.Join(l.st.Root, prof.DashboardConfig)
		if err := writeFile(path, conf, 0o640); err != nil {
			t.Fatal(err)
		}
		if prof.DashboardAPIConfig != "" {
			if err := writeFile(filepath.Join(l.st.Root, prof.DashboardAPIConfig), []byte("hosts:\n  - default:\n      url: https://localhost\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.configureHost(); err != nil {
			t.Fatal(err)
		}
		dc, err := dashboard.LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		if dc.Host != "127.0.0.31" || len(dc.IndexerHosts) != 3 {
			t.Errorf("%s dashboard: host %s, indexer hosts %v", name, dc.Host, dc.IndexerHosts)
		}
	}
}

func TestOpensearchYMLCluster(t *testing.T) {
	l := testHost(t, Profiles["wazuh"], "indexer-2")
	l.st.Ports.Transport = 39300
	yml := opensearchYML(IndexerSpec{Profile: l.prof, Version: "4.9.0", Root: "/r", HTTPPort: 29200, TransPort: 39300, Cluster: l.indexerCluster()})
	for _, want := range []string{"node.name: indexer-2\nnetwork.host: 127.0.0.12\n",
		`discovery.seed_hosts: ["127.0.0.11:39300", "127.0.0.12:39300", "127.0.0.13:39300"]`,
		`cluster.initial_cluster_manager_nodes: ["indexer-1", "indexer-2", "indexer-3"]`,
		`- "CN=indexer-*,OU=Wazuh,O=Wazuh,L=California,C=US"`,
		`path.repo: ["` + sharedSnapshotDir(l.st.Dir) + `"]`} {
		if !strings.Contains(yml, want) {
			t.Errorf("opensearch.yml lacks %q:\n%s", want, yml)
		}
	}
	if strings.Contains(yml, "single-node") {
		t.Errorf("a cluster node with discovery.type single-node")
	}
}

// TestHostConfigComponents: each distributed host's siemctl.yaml names the components it runs, so
// siemctl's health and services judge and act on those (indexer hosts the indexer, managers the
// manager and Filebeat, the dashboard host the dashboard).
func TestHostConfigComponents(t *testing.T) {
	want := map[string]string{"indexer-1": "indexer", "indexer-3": "indexer", "manager-1": "manager shipper", "manager-2": "manager shipper", "dashboard-1": "dashboard"}
	for _, name := range ProfileNames() {
		for host, comps := range want {
			l := testHost(t, Profiles[name], host)
			cfg, err := writtenConfig(t, l)
			if err != nil {
				t.Fatalf("%s %s: siemctl cannot load the host's config: %v", name, host, err)
			}
			if got := strings.Join(cfg.HostComponents(), " "); got != comps {
				t.Errorf("%s %s: components %q, want %q", name, host, got, comps)
			}
		}
	}
}

// The version-mismatch fault installs the lab's other release than the master's, whichever the lab
// was brought up with.
func TestOtherRelease(t *testing.T) {
	for in, want := range map[string]string{"4.9.0-1": "4.10.0-1", "4.10.0-1": "4.9.0-1", "4.10.0-2": "4.9.0-1"} {
		if got, err := otherRelease(in); err != nil || got != want {
			t.Errorf("otherRelease(%s) = %q, %v; want %s", in, got, err, want)
		}
	}
}

// The manager nodes of a distributed lab seed disjoint agents (the master 001-005, the worker
// 006-010: the emulator's default count each); a single lab and other hosts keep the default.
func TestSeedFrom(t *testing.T) {
	if managerSeedAgents != manager.DefaultSeedAgents {
		t.Fatalf("the lab spaces seeds by %d, the emulator seeds %d", managerSeedAgents, manager.DefaultSeedAgents)
	}
	for host, want := range map[string]int{"manager-1": 1, "manager-2": 6, "indexer-1": 0, "dashboard-1": 0} {
		if got := testHost(t, Profiles["wazuh"], host).seedFrom(); got != want {
			t.Errorf("%s: first seeded agent %d, want %d", host, got, want)
		}
	}
	if got := (&Lab{core: core{st: &State{}}}).seedFrom(); got != 0 {
		t.Errorf("single lab: %d", got)
	}
}
