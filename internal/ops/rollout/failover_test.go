package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// nodesHTTP is GET _nodes/http?filter_path=nodes.*.name,nodes.*.http.publish_address as
// OpenSearch 2.x answers it; the second node publishes "hostname/ip:port".
func nodesHTTP(a, b string) []byte {
	host := func(u string) string { p, _ := url.Parse(u); return p.Host }
	return fmt.Appendf(nil, `{"nodes":{"Yq3cXNTPQdKkVbXh1Lr5Zw":{"name":"node-1","http":{"publish_address":%q}},`+
		`"c2cN4z1pRamUO0uVqK4Vdg":{"name":"node-2","http":{"publish_address":"indexer-2/%s"}}}}`, host(a), host(b))
}

// failoverOver is what roll.Deps builds: the store over indexer.url (primary) and, when it does
// not answer, the nodes kept in dir.
func failoverOver(primary *indexer.Client, dir string) *rollout.Failover {
	return rollout.Over(primary, dir).(*rollout.Failover)
}

// TestFailoverReachesRecordThroughAnotherNode: while indexer.url answers, the other nodes'
// addresses are learned and kept; once it refuses connections (its node stopped), a new process
// reads and writes the record through the next node, says which, and takes and ends a turn there.
func TestFailoverReachesRecordThroughAnotherNode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	docs := indexertest.NewDocuments(rollout.Index)
	a := indexertest.NewServer(t, docs.Routes(rollout.DocID))
	b := indexertest.NewServer(t, docs.Routes(rollout.DocID))
	a.Set("GET /_nodes/http", indexertest.Route{Body: nodesHTTP(a.URL, b.URL)})

	fo := failoverOver(a.Client(t), dir)
	s := rollout.NewStore(fo)
	rolling(t, s, threeNodeRecord())
	if who := fo.Answered(); who != "" {
		t.Fatalf("answered by %q while indexer.url answers", who)
	}
	kept := rollout.LoadNodes(dir)
	if len(kept) != 2 || kept[0].Name != "node-1" || kept[0].URL != a.URL || kept[1].Name != "node-2" || kept[1].URL != b.URL {
		t.Fatalf("kept nodes %+v, want node-1 at %s and node-2 at %s", kept, a.URL, b.URL)
	}
	if fi, err := os.Stat(filepath.Join(dir, rollout.NodesFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("nodes file: %v %v", fi, err)
	}

	a.Close() // node-1 stopped: connection refused
	fo = failoverOver(a.Client(t), dir)
	s = rollout.NewStore(fo)
	rec, err := s.Load(ctx)
	if err != nil {
		t.Fatalf("Load with indexer.url down: %v", err)
	}
	if rec.RunID != threeNodeRecord().RunID || !strings.Contains(fo.Answered(), "node-2") || !strings.Contains(fo.Answered(), b.URL) {
		t.Fatalf("run %q answered by %q, want node-2 at %s", rec.RunID, fo.Answered(), b.URL)
	}
	writes := docs.Writes()
	turn, err := s.Take(ctx, host("h1", "indexer/indexer-1"), time.Minute)
	if err != nil {
		t.Fatalf("Take through node-2: %v", err)
	}
	if err := turn.Renew(ctx); err != nil {
		t.Fatalf("Renew through node-2: %v", err)
	}
	if err := turn.Done(ctx); err != nil {
		t.Fatalf("Done through node-2: %v", err)
	}
	if docs.Writes() != writes+3 {
		t.Fatalf("%d writes through node-2, want 3", docs.Writes()-writes)
	}
	if _, ok := b.Last("PUT /" + rollout.Index + "/_doc/" + rollout.DocID); !ok {
		t.Fatal("node-2 received no write")
	}

	// Every node down: one error naming each address tried, without the password.
	b.Close()
	_, err = rollout.NewStore(failoverOver(a.Client(t), dir)).Load(ctx)
	if !errors.Is(err, netclient.ErrUnreachable) || !strings.Contains(err.Error(), "also tried node-2") {
		t.Fatalf("Load with every node down: %v", err)
	}
	if strings.Contains(err.Error(), indexertest.Password) {
		t.Fatalf("the password is in the error: %v", err)
	}
}

// TestFailoverOn503: a node that answers 503 (cluster manager not discovered, security not
// initialised while it starts) hands the read to the next node; an answer that is not about the
// node's readiness (a version conflict) is returned as is, never retried elsewhere.
func TestFailoverOn503(t *testing.T) {
	ctx := context.Background()
	docs := indexertest.NewDocuments(rollout.Index)
	a := indexertest.NewServer(t, docs.Routes(rollout.DocID))
	b := indexertest.NewServer(t, docs.Routes(rollout.DocID))
	rolling(t, rollout.NewStore(b.Client(t)), threeNodeRecord())
	a.Set("GET /"+rollout.Index+"/_doc/"+rollout.DocID, indexertest.Route{Status: http.StatusServiceUnavailable,
		Body: []byte(`{"error":{"root_cause":[{"type":"cluster_manager_not_discovered_exception","reason":null}],"type":"cluster_manager_not_discovered_exception","reason":null},"status":503}`)})
	fo := &rollout.Failover{Primary: a.Client(t), PrimaryURL: a.URL, Nodes: []indexer.NodeHTTP{{Name: "node-1", URL: a.URL}, {Name: "node-2", URL: b.URL}},
		Dial: func(u string) (rollout.API, error) { return a.Client(t).At(u) }}
	if _, err := rollout.NewStore(fo).Load(ctx); err != nil || !strings.Contains(fo.Answered(), "node-2") {
		t.Fatalf("Load with indexer.url answering 503: %v, answered by %q", err, fo.Answered())
	}
	before := len(b.Requests())
	_, err := fo.PutDocument(ctx, rollout.Index, rollout.DocID, map[string]string{"x": "y"}, indexer.Condition{IfMatch: true, SeqNo: 999, PrimaryTerm: 1})
	if err == nil || !strings.Contains(err.Error(), "409") || len(b.Requests()) != before || fo.Answered() != "" {
		t.Fatalf("stale conditional write: %v; node-2 got %d requests, want none (indexer.url answered the conflict)", err, len(b.Requests())-before)
	}
}

// TestFailoverWithoutKnownNodes: indexer.url down and no node learned yet: the error says where
// the addresses come from.
func TestFailoverWithoutKnownNodes(t *testing.T) {
	a := indexertest.NewServer(t, nil)
	a.Close()
	fo := failoverOver(a.Client(t), t.TempDir())
	_, err := rollout.NewStore(fo).Load(context.Background())
	if !errors.Is(err, netclient.ErrUnreachable) || !strings.Contains(err.Error(), rollout.NodesFile) {
		t.Fatalf("Load: %v", err)
	}
}

// TestSaveNodesNoSymlink: the nodes file replaces a symlink rather than writing through it, and a
// state_dir that is a symlink is refused.
func TestSaveNodesNoSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, rollout.NodesFile)); err != nil {
		t.Fatal(err)
	}
	nodes := []indexer.NodeHTTP{{Name: "node-2", URL: "https://127.0.0.2:9200"}}
	if rollout.LoadNodes(dir) != nil {
		t.Fatal("a symlinked nodes file was read")
	}
	if err := rollout.SaveNodes(dir, nodes); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep\n" {
		t.Fatalf("written through the symlink: %q", got)
	}
	if got := rollout.LoadNodes(dir); len(got) != 1 || got[0] != nodes[0] {
		t.Fatalf("read back %+v", got)
	}
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := rollout.SaveNodes(link, nodes); err == nil {
		t.Fatal("a symlinked state_dir was written to")
	}
}

// TestFailoverPastACertificateThatDoesNotCover: a node whose certificate does not cover the address
// it publishes (here "localhost", which the test certificate leaves out) is skipped for the next.
func TestFailoverPastACertificateThatDoesNotCover(t *testing.T) {
	docs := indexertest.NewDocuments(rollout.Index)
	a := indexertest.NewTLSServer(t, docs.Routes(rollout.DocID))
	b := indexertest.NewTLSServer(t, docs.Routes(rollout.DocID))
	rolling(t, rollout.NewStore(b.Client(t)), threeNodeRecord())
	a.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(b.URL, "https://"), ":")
	primary := a.Client(t)
	fo := &rollout.Failover{Primary: primary, PrimaryURL: primary.URL(),
		Nodes: []indexer.NodeHTTP{{Name: "node-2", URL: "https://localhost:" + port}, {Name: "node-3", URL: b.URL}},
		Dial:  func(u string) (rollout.API, error) { return primary.At(u) }}
	if _, err := rollout.NewStore(fo).Load(context.Background()); err != nil || !strings.Contains(fo.Answered(), "node-3") {
		t.Fatalf("Load: %v, answered by %q, want node-3", err, fo.Answered())
	}
}
