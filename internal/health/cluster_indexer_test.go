package health

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
)

// The indexer bodies of testdata/cluster were captured from the distributed lab's three real
// OpenSearch 2.11.1 nodes (GET / says 7.10.2 there: the compatibility override).

// clusterIndexer serves the captured bodies; drop removes a node from _nodes and _cat/nodes (and
// from the health's node counts), version rewrites one node's version in both.
func clusterIndexer(t *testing.T, drop, versionOf, version string) *indexer.Client {
	t.Helper()
	return clusterIndexerServing(t, []string{drop}, versionOf, version)
}

func clusterIndexerDropping(t *testing.T, drop ...string) *indexer.Client {
	t.Helper()
	return clusterIndexerServing(t, drop, "", "")
}

func clusterIndexerServing(t *testing.T, drop []string, versionOf, version string) *indexer.Client {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "cluster", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var nodes struct {
		Nodes map[string]map[string]any `json:"nodes"`
	}
	var cat []map[string]any
	var health map[string]any
	_ = json.Unmarshal(read("indexer_nodes.json"), &nodes)
	_ = json.Unmarshal(read("indexer_cat_nodes.json"), &cat)
	_ = json.Unmarshal(read("indexer_health.json"), &health)
	for id, n := range nodes.Nodes {
		if slices.Contains(drop, n["name"].(string)) {
			delete(nodes.Nodes, id)
		}
		if n["name"] == versionOf {
			n["version"] = version
		}
	}
	var keep []map[string]any
	for _, n := range cat {
		if n["name"] == versionOf {
			n["version"] = version
		}
		if !slices.Contains(drop, n["name"].(string)) {
			keep = append(keep, n)
		}
	}
	if len(keep) != len(cat) {
		health["number_of_nodes"], health["number_of_data_nodes"] = float64(len(keep)), float64(len(keep))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		var v any
		switch r.URL.Path {
		case "/":
			_, _ = w.Write(read("indexer_root.json"))
			return
		case "/_nodes":
			v = nodes
		case "/_cat/nodes":
			v = keep
		case "/_cat/cluster_manager":
			_, _ = w.Write(read("indexer_cluster_manager.json"))
			return
		case "/_cluster/health":
			v = health
		default:
			http.Error(w, `{"error":"unexpected"}`, 404)
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}))
	t.Cleanup(srv.Close)
	c, err := indexer.New(indexer.Options{URL: srv.URL, Username: "admin", Password: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runIndexerCluster(t *testing.T, c *indexer.Client, expected []string) Result {
	t.Helper()
	cfg := testConfig(t)
	cfg.StateDir = t.TempDir()
	return runIndexerClusterWith(t, c, cfg, expected)
}

func runIndexerClusterWith(t *testing.T, c *indexer.Client, cfg *config.Config, expected []string) Result {
	t.Helper()
	cfg.Indexer.Nodes = expected
	e := &Env{Now: func() time.Time { return testNow }, Stack: Stack{Config: cfg, Indexer: clientset.Of[IndexerAPI](c)}}
	rep := Run(context.Background(), e, []Check{{ID: "indexer.cluster", Component: "indexer", Run: withIndexer(checkIndexerCluster)}})
	if len(rep.Results) == 0 {
		return Result{NotApplicable: true}
	}
	return rep.Results[0]
}

func TestIndexerCluster(t *testing.T) {
	all := []string{"indexer-1", "indexer-2", "indexer-3"}
	t.Run("healthy: real versions from _nodes, elected manager, heap and disk", func(t *testing.T) {
		r := runIndexerCluster(t, clusterIndexer(t, "", "", ""), all)
		if r.Status != OK || r.Summary != "3 node(s), all on 2.11.1, cluster manager indexer-3" || len(r.Evidence) != 3 ||
			!strings.HasPrefix(r.Evidence[2], "indexer-3: 2.11.1, roles cluster_manager,data,ingest,remote_cluster_client (elected cluster manager), heap ") {
			t.Fatalf("%s %q %v", r.Status, r.Summary, r.Evidence)
		}
	})
	t.Run("a node down is named", func(t *testing.T) {
		r := runIndexerCluster(t, clusterIndexer(t, "indexer-2", "", ""), all)
		if r.Status != Crit || !strings.HasPrefix(r.Summary, "node(s) missing: indexer-2 (2/3 in the cluster)") ||
			!strings.Contains(r.Fix, "on indexer-2: siemctl services start indexer") || r.Evidence[1] != "indexer-2: not in the cluster" {
			t.Fatalf("%s %q %q %v", r.Status, r.Summary, r.Fix, r.Evidence)
		}
	})
	t.Run("without indexer.nodes and no node seen before, the nodes that answer are judged", func(t *testing.T) {
		if r := runIndexerCluster(t, clusterIndexer(t, "indexer-2", "", ""), nil); r.Status != OK || !strings.HasPrefix(r.Summary, "2 node(s)") {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
	})
	t.Run("versions differ mid-roll", func(t *testing.T) {
		r := runIndexerCluster(t, clusterIndexer(t, "", "indexer-1", "2.19.3"), all)
		if r.Status != Warn || r.Summary != "versions differ: 2.11.1 on indexer-2, indexer-3; 2.19.3 on indexer-1" {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
	})
	t.Run("two nodes answering are judged even when one is configured", func(t *testing.T) {
		if r := runIndexerCluster(t, clusterIndexer(t, "indexer-2", "", ""), []string{"indexer-1"}); r.Status != OK || r.NotApplicable {
			t.Fatalf("%s %q", r.Status, r.Summary)
		}
	})
}

// Without indexer.nodes, health expects every node this host has seen (state_dir/cache): a node that
// leaves is named, with the way to retire it for good (a configured list), which then wins.
func TestIndexerClusterRemembersItsNodes(t *testing.T) {
	cfg := testConfig(t)
	cfg.StateDir = t.TempDir()
	if r := runIndexerClusterWith(t, clusterIndexer(t, "", "", ""), cfg, nil); r.Status != OK {
		t.Fatalf("all three: %s %q", r.Status, r.Summary)
	}
	r := runIndexerClusterWith(t, clusterIndexer(t, "indexer-2", "", ""), cfg, nil)
	if r.Status != Crit || !strings.HasPrefix(r.Summary, "node(s) missing: indexer-2 (2/3 in the cluster)") ||
		!strings.Contains(r.Fix, "on indexer-2: siemctl services start indexer") || !strings.Contains(r.Fix, "list the nodes it has now in indexer.nodes") {
		t.Fatalf("indexer-2 gone: %s %q %q", r.Status, r.Summary, r.Fix)
	}
	// The fix as printed: indexer-2 retired, the nodes it has now listed.
	if r := runIndexerClusterWith(t, clusterIndexer(t, "indexer-2", "", ""), cfg, []string{"indexer-1", "indexer-3"}); r.Status != OK {
		t.Fatalf("indexer.nodes set: %s %q", r.Status, r.Summary)
	}
	// Down to one node answering: the record still says three.
	one := clusterIndexerOnly(t, "indexer-1")
	if r := runIndexerClusterWith(t, one, cfg, nil); r.Status != Crit || !strings.Contains(r.Summary, "indexer-2") || !strings.Contains(r.Summary, "indexer-3") {
		t.Fatalf("one node left: %s %q", r.Status, r.Summary)
	}
	// A symlink at the record's place is never followed: the record is replaced, the target untouched.
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(cfg.StateDir, "cache", seenNodesFile)
	if err := os.Remove(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, rec); err != nil {
		t.Fatal(err)
	}
	_ = runIndexerClusterWith(t, clusterIndexer(t, "", "", ""), cfg, nil)
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the record was written through a symlink: %q", b)
	}
	if fi, err := os.Lstat(rec); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("the record is still a symlink: %v", err)
	}
}

// clusterIndexerOnly serves the captured bodies with every node but keep dropped.
func clusterIndexerOnly(t *testing.T, keep string) *indexer.Client {
	t.Helper()
	var drop []string
	for _, n := range []string{"indexer-1", "indexer-2", "indexer-3"} {
		if n != keep {
			drop = append(drop, n)
		}
	}
	return clusterIndexerDropping(t, drop...)
}
