package rollout_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/rollout"
)

func names(es []rollout.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name+"="+string(e.Role))
	}
	return strings.Join(out, " ")
}

// TestOrder: indexers by name with the elected cluster manager last, the master, the workers,
// the dashboards; what stops the order is named with its fix.
func TestOrder(t *testing.T) {
	idx := []indexer.NodeVersion{{Name: "node-3", Version: "2.19.3"}, {Name: "node-1", Version: "2.19.3"}, {Name: "node-2", Version: "2.19.3"}}
	mgr := []manager.ClusterNode{{Name: "worker02", Type: "worker", Version: "4.9.0"}, {Name: "master-node", Type: "master", Version: "4.9.0"}, {Name: "worker01", Type: "worker", Version: "4.9.0"}}
	cases := []struct {
		name    string
		f       rollout.Facts
		want    string
		problem string
	}{
		{"elected in the middle goes last", rollout.Facts{IndexerNodes: idx, ElectedManager: "node-2", ManagerNodes: mgr, Dashboards: []string{"dash.example", "dash.example"}},
			"indexer/node-1=indexer indexer/node-3=indexer indexer/node-2=indexer-cluster-manager manager/master-node=manager-master manager/worker01=manager-worker manager/worker02=manager-worker dashboard/dash.example=dashboard", ""},
		{"single manager with the cluster disabled", rollout.Facts{IndexerNodes: idx[:1], ElectedManager: "node-3", ManagerSingle: "node01"},
			"indexer/node-3=indexer-cluster-manager manager/node01=manager-master", ""},
		{"no elected cluster manager", rollout.Facts{IndexerNodes: idx, ManagerNodes: mgr}, "", "no elected cluster manager"},
		{"expected indexer node missing", rollout.Facts{IndexerNodes: idx, ElectedManager: "node-1", ManagerNodes: mgr, ExpectedIndexer: []string{"node-1", "node-4"}}, "", "indexer node node-4 (indexer.nodes) is not in the cluster"},
		{"expected worker not connected", rollout.Facts{IndexerNodes: idx, ElectedManager: "node-1", ManagerNodes: mgr, ExpectedManager: []string{"worker03"}}, "", "manager node worker03 (manager.nodes) is not connected"},
		{"no manager at all", rollout.Facts{IndexerNodes: idx, ElectedManager: "node-1"}, "", "no manager node known"},
		{"workers but no master", rollout.Facts{IndexerNodes: idx, ElectedManager: "node-1", ManagerNodes: mgr[:1]}, "", "lists no master"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rollout.Order(tc.f)
			var oe *rollout.OrderError
			if tc.problem != "" {
				if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("err %v, want one naming %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tc.want {
				t.Fatalf("order\n %s\nwant\n %s", names(got), tc.want)
			}
			rec := rollout.Record{RunID: "r", Target: "4.10.0", Order: got}
			if err := rec.Validate(); err != nil {
				t.Fatalf("the order does not validate: %v", err)
			}
		})
	}
}

// TestHostIdentity: a host's entries come from its components' own config files.
func TestHostIdentity(t *testing.T) {
	dir := t.TempDir()
	idxConf := filepath.Join(dir, "etc/wazuh-indexer")
	install := filepath.Join(dir, "var/ossec")
	for _, d := range []string{idxConf, filepath.Join(install, "etc")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(idxConf, "opensearch.yml"), "network.host: 127.0.0.11\nnode.name: indexer-1\ncluster.name: wazuh-cluster\n")
	ossec := `<ossec_config>
  <global><jsonout_output>yes</jsonout_output></global>
</ossec_config>
<ossec_config>
  <cluster>
    <name>wazuh</name>
    <node_name>worker01</node_name>
    <node_type>worker</node_type>
    <key>c98b62a9b6169ac5f67dae55ae4a9088</key>
    <disabled>no</disabled>
  </cluster>
</ossec_config>
`
	write(filepath.Join(install, "etc/ossec.conf"), ossec)
	cfg := &config.Config{Components: []string{"indexer", "manager", "shipper", "dashboard"},
		Indexer: config.Indexer{ConfigDir: idxConf}, Manager: config.Manager{InstallDir: install},
		Dashboard: config.Dashboard{URL: "https://dash.example:443"}}
	id, err := rollout.HostIdentity(cfg, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(id.Names, " "); id.Host != "host-a" || got != "indexer/indexer-1 manager/worker01 dashboard/dash.example" {
		t.Fatalf("identity %+v", id)
	}
	// A disabled cluster: manager.nodes' only name.
	write(filepath.Join(install, "etc/ossec.conf"), strings.Replace(ossec, "<disabled>no", "<disabled>yes", 1))
	cfg.Components = []string{"manager"}
	cfg.Manager.Nodes = []string{"node01"}
	if id, err := rollout.HostIdentity(cfg, "host-a"); err != nil || strings.Join(id.Names, " ") != "manager/node01" {
		t.Fatalf("disabled cluster: %+v %v", id, err)
	}
	// A missing opensearch.yml is an error naming the fix, not a silent identity.
	cfg.Components = []string{"indexer"}
	cfg.Indexer.ConfigDir = filepath.Join(dir, "nowhere")
	if _, err := rollout.HostIdentity(cfg, "host-a"); err == nil || !strings.Contains(err.Error(), "node.name") {
		t.Fatalf("missing opensearch.yml: %v", err)
	}
	cfg.Components = []string{"shipper"}
	if _, err := rollout.HostIdentity(cfg, "host-a"); !errors.Is(err, rollout.ErrInvalid) {
		t.Fatalf("a shipper-only host: %v, want ErrInvalid", err)
	}
}
