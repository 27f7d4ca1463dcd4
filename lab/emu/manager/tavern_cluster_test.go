package manager

import (
	"os"
	"strings"
	"testing"
)

// tavernCluster makes h the master "master-node" of the integration environment's cluster "wazuh" (its
// docker-compose runs master-node, worker1 and worker2, every one on the same version), with both
// workers connected over loopback, for the test_cluster_endpoints file; nil for the other files, which
// run against a standalone manager.
func tavernCluster(t *testing.T, file string, h Home) *ClusterDaemon {
	t.Helper()
	if file != "test_cluster_endpoints.tavern.yaml" {
		return nil
	}
	b, err := os.ReadFile(h.OssecConf())
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.Replace(string(b), "<disabled>yes</disabled>\n  </cluster>", "<disabled>no</disabled>\n  </cluster>", 1)
	conf = strings.Replace(conf, "<node_name>node01</node_name>", "<node_name>master-node</node_name>", 1)
	conf = strings.Replace(conf, "<name>siem</name>", "<name>wazuh</name>", 1)
	if err := os.WriteFile(h.OssecConf(), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := ParseClusterConfig([]byte(conf)); err != nil || c.Disabled || c.NodeName != "master-node" || c.Name != "wazuh" {
		t.Fatalf("tavern cluster config: %+v %v", c, err)
	}
	m := clusterNode(t, h, "master", "master-node", "4.9.0", "", "")
	m.mu.Lock()
	m.o.ActiveAgents = storedActiveAgents(h, "master-node") // read under m.mu (healthLocked)
	m.mu.Unlock()
	var workers []*ClusterDaemon
	for _, name := range []string{"worker1", "worker2"} {
		workers = append(workers, clusterNode(t, newHome(t, 0), "worker", name, "4.9.0", m.Addr(), t.TempDir()))
	}
	waitFor(t, "worker1 and worker2 to join master-node", func() bool { return workers[0].Connected() && workers[1].Connected() })
	return m
}
