package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/runs"
)

// The _nodes and _cat/cluster_manager answers of a three-node OpenSearch 2.19 cluster.
const (
	nodes3 = `{"nodes":{"Xq1":{"name":"indexer-1","version":"2.19.3","roles":["cluster_manager","data","ingest"]},` +
		`"Xq2":{"name":"indexer-2","version":"2.19.3","roles":["cluster_manager","data","ingest"]},` +
		`"Xq3":{"name":"indexer-3","version":"2.19.3","roles":["cluster_manager","data","ingest"]}}}`
	elected2 = `[{"node":"indexer-2"}]`
)

// fakeManager is the manager cluster as /cluster/healthcheck lists it.
type fakeManager struct {
	nodes []manager.ClusterNode
	err   error
}

func (m fakeManager) ClusterHealthcheck(context.Context) ([]manager.ClusterNode, error) {
	return m.nodes, m.err
}

type clusterRig struct {
	deps  ClusterDeps
	ix    rollout.API
	docs  *indexertest.Documents
	srv   *indexertest.Server
	clock time.Time
	cfg   *config.Config
}

// newClusterRig is an indexer cluster of three nodes (indexer-2 elected), a master and a worker, a
// dashboard, and this host: indexer-1 (its opensearch.yml) unless components say otherwise.
func newClusterRig(t *testing.T, components ...string) *clusterRig {
	t.Helper()
	docs := indexertest.NewDocuments(rollout.Index)
	routes := docs.Routes(rollout.DocID)
	routes["GET /_nodes"] = indexertest.Route{Body: []byte(nodes3)}
	routes["GET /_cat/cluster_manager"] = indexertest.Route{Body: []byte(elected2)}
	srv := indexertest.NewServer(t, routes)
	ix := srv.Client(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "opensearch.yml"), []byte("node.name: indexer-1\nnetwork.host: 127.0.0.11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(components) == 0 {
		components = []string{"indexer"}
	}
	cfg := &config.Config{Components: components, StateDir: t.TempDir(), Indexer: config.Indexer{ConfigDir: dir},
		Dashboard: config.Dashboard{URL: "https://127.0.0.31:5601"}}
	r := &clusterRig{ix: ix, docs: docs, srv: srv, clock: time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC), cfg: cfg}
	mgr := fakeManager{nodes: []manager.ClusterNode{{Name: "manager-2", Type: "worker", Version: "4.9.0"}, {Name: "manager-1", Type: "master", Version: "4.9.0"}}}
	r.deps = ClusterDeps{
		Config:   func() (*config.Config, error) { return cfg, nil },
		Indexer:  func(context.Context) (ClusterIndexer, error) { return ix, nil },
		Manager:  func(context.Context) (rollout.ManagerFacts, error) { return mgr, nil },
		Hostname: func() (string, error) { return "host-a", nil },
		Now:      func() time.Time { return r.clock },
	}
	return r
}

func (r *clusterRig) store() *rollout.Store {
	s := rollout.NewStore(r.ix)
	s.Now = func() time.Time { return r.clock }
	return s
}

// rollingRig is a rig whose run is rolling, and this host's turn options (a minute's lease).
func rollingRig(t *testing.T) (*clusterRig, TurnOptions) {
	t.Helper()
	r := newClusterRig(t)
	r.rolling(t)
	return r, TurnOptions{Cluster: r.deps, Lease: time.Minute}
}

func (r *clusterRig) rolling(t *testing.T) rollout.Record {
	t.Helper()
	ctx := context.Background()
	ix, _ := r.deps.Indexer(ctx)
	mg, _ := r.deps.Manager(ctx)
	facts, err := rollout.Gather(ctx, r.cfg, ix, mg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rollout.NewRecord("20261128T010000Z-abc123", "4.9.0", "4.10.0", "host-a", facts)
	if err != nil {
		t.Fatal(err)
	}
	s := r.store()
	if _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	out, err := s.SetPhase(ctx, rec.RunID, nil, rollout.PhaseRolling, "")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunPlanCluster: the order from the clusters' facts, the gates, the budget; a run in
// progress makes the plan NO-GO (exit 3).
func TestRunPlanCluster(t *testing.T) {
	r := newClusterRig(t)
	io, _, out, _ := output.Test()
	opts := &PlanOptions{Common: runs.Common{IO: io, Output: "json"}, To: "4.10.0", ClusterMode: true, Cluster: r.deps}
	if err := runPlanCluster(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var rep ClusterPlan
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rep.Order {
		got = append(got, e.Name+"="+string(e.Role))
	}
	want := "indexer/indexer-1=indexer indexer/indexer-3=indexer indexer/indexer-2=indexer-cluster-manager manager/manager-1=manager-master manager/manager-2=manager-worker dashboard/127.0.0.31=dashboard"
	if strings.Join(got, " ") != want || rep.Verdict != "GO" || rep.ElectedManager != "indexer-2" {
		t.Fatalf("plan %s %s\n got %s\nwant %s", rep.Verdict, rep.ElectedManager, strings.Join(got, " "), want)
	}
	if len(rep.Budget.Turns) != 6 || rep.Budget.Total <= rep.Budget.Apply || rep.Budget.WindowMax <= rep.Budget.Total || len(rep.Gates) != 5 {
		t.Fatalf("budget %+v gates %d", rep.Budget, len(rep.Gates))
	}
	if !strings.Contains(strings.Join(rep.Calls["node"], "\n"), "if_seq_no=<seq_no read>") {
		t.Fatalf("node calls %q", rep.Calls["node"])
	}
	if len(r.srv.Requests()) != 3 || r.docs.Writes() != 0 {
		t.Fatalf("plan wrote or asked more than the facts and the record: %d requests, %d writes", len(r.srv.Requests()), r.docs.Writes())
	}

	r.rolling(t)
	io, _, out, _ = output.Test()
	opts.Common = runs.Common{IO: io, Output: "table"}
	err := runPlanCluster(context.Background(), opts)
	if cli.ExitCode(err) != cli.ExitNoGo {
		t.Fatalf("plan with a run in progress: %v (exit %d)", err, cli.ExitCode(err))
	}
	for _, want := range []string{"Rolling upgrade plan to 4.10.0: NO-GO", "run 20261128T010000Z-abc123 to 4.10.0 is in phase rolling",
		"indexer/indexer-2", "indexer-cluster-manager", "Time budget: apply", "node: manager-master, manager-worker",
		"Coordination record (siemctl-rollout/_doc/run) calls:", "PUT /siemctl-rollout/_doc/run?op_type=create"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunStatusCluster: every entry's state, the holder and its lease, in a table and JSON.
func TestRunStatusCluster(t *testing.T) {
	r := newClusterRig(t)
	io, _, _, _ := output.Test()
	opts := &StatusOptions{Common: runs.Common{IO: io, Output: "table"}, ClusterMode: true, Cluster: r.deps}
	if err := runStatusCluster(context.Background(), opts); !errors.Is(err, rollout.ErrNoRun) || !strings.Contains(err.Error(), "upgrade apply --cluster") {
		t.Fatalf("status without a run: %v", err)
	}
	r.rolling(t)
	turn, err := r.store().Take(context.Background(), rollout.Identity{Host: "host-a", Names: []string{"indexer/indexer-1"}}, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r.clock = r.clock.Add(30 * time.Second)
	io, _, out, _ := output.Test()
	opts.Common = runs.Common{IO: io, Output: "table"}
	if err := runStatusCluster(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"phase rolling", "Turn: indexer/indexer-1, held by host host-a", "(1m30s left)", "0 done, 1 running, 0 failed, 5 pending",
		"indexer/indexer-1\tindexer\tindexer\tRUNNING\t1\thost-a"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	r.clock = r.clock.Add(2 * time.Minute)
	io, _, out, _ = output.Test()
	opts.Common = runs.Common{IO: io, Output: "json"}
	if err := runStatusCluster(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var st ClusterStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Current != "indexer/indexer-1" || st.LeaseLeft == nil || *st.LeaseLeft != -30 || st.Counts[rollout.Pending] != 5 || st.Record.Holder.Host != turn.Host {
		t.Fatalf("status json %+v", st)
	}
	// The holder's token would let anyone write as the holder: status leaves it out.
	if turn.Token == "" || strings.Contains(out.String(), turn.Token) || strings.Contains(out.String(), `"token"`) {
		t.Fatalf("status json shows the holder's lease token:\n%s", out.String())
	}
	// The host it ran on and its own entries: what ansible/upgrade.yml maps turns to hosts with.
	if st.ThisHost == nil || st.ThisHost.Host != "host-a" || strings.Join(st.ThisHost.Mine, ",") != "indexer/indexer-1" || st.ThisHostError != "" {
		t.Fatalf("status json this_host %+v (%s)", st.ThisHost, st.ThisHostError)
	}
	// A host whose identity cannot be told still gets the record, with the reason.
	r.cfg.Indexer.ConfigDir = filepath.Join(t.TempDir(), "missing")
	io, _, out, _ = output.Test()
	opts.Common = runs.Common{IO: io, Output: "json"}
	if err := runStatusCluster(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	st = ClusterStatus{}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.ThisHost != nil || !strings.Contains(st.ThisHostError, "node name") || len(st.Record.Order) != 6 {
		t.Fatalf("status json without an identity: %+v (%q)", st.ThisHost, st.ThisHostError)
	}
}

// TestInTurn: the turn part of upgrade node: work under the turn, the turn given back when
// nothing changed, exit 7 naming whose turn it is, exit 6 while this host's lock is held.
func TestInTurn(t *testing.T) {
	ctx := context.Background()
	r, o := rollingRig(t)
	var errOut strings.Builder

	// Give back: nothing was changed.
	err := InTurn(ctx, o, &errOut, func(context.Context, *rollout.Turn) error {
		return fmt.Errorf("preflight refused: %w", rollout.ErrNothingDone)
	})
	if !errors.Is(err, rollout.ErrNothingDone) || !strings.Contains(errOut.String(), "given back") {
		t.Fatalf("give back: %v\n%s", err, errOut.String())
	}
	var ran *rollout.Turn
	if err := InTurn(ctx, o, &errOut, func(_ context.Context, turn *rollout.Turn) error { ran = turn; return nil }); err != nil {
		t.Fatal(err)
	}
	if ran == nil || ran.Entry().Name != "indexer/indexer-1" || ran.Entry().State != rollout.Done || ran.Entry().Attempts != 2 {
		t.Fatalf("turn %+v", ran)
	}
	// indexer-1 is done: the next turn is indexer-3's, not this host's.
	err = InTurn(ctx, o, &errOut, func(context.Context, *rollout.Turn) error { t.Fatal("worked out of turn"); return nil })
	var nyt *rollout.NotYourTurnError
	if !errors.As(err, &nyt) || nyt.Whose != "indexer/indexer-3" || cli.ExitCode(err) != cli.ExitNotYourTurn {
		t.Fatalf("out of turn: %v (exit %d)", err, cli.ExitCode(err))
	}
	// Another siemctl holds this host's lock: nothing is read or written.
	held, err := lock.Acquire(ctx, lock.HostPath(r.cfg.StateDir), lock.Holder{Command: "siemctl upgrade node"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	o.Cluster.HostLock = func(ctx context.Context) (func(), error) {
		l, err := lock.Acquire(ctx, lock.HostPath(r.cfg.StateDir), lock.Holder{Command: "test"}, 0)
		if err != nil {
			return nil, err
		}
		return func() { _ = l.Release() }, nil
	}
	writes := r.docs.Writes()
	if err := InTurn(ctx, o, &errOut, nil); cli.ExitCode(err) != cli.ExitLocked || r.docs.Writes() != writes {
		t.Fatalf("with the host lock held: %v (exit %d), %d writes", err, cli.ExitCode(err), r.docs.Writes()-writes)
	}
	if err := (&TurnOptions{Lease: time.Millisecond}).Check(); err == nil {
		t.Fatal("a 1ms lease passed Check")
	}
}

// TestTurnCalls: the dry run of a turn names the record's calls and whose turn it is.
func TestTurnCalls(t *testing.T) {
	r := newClusterRig(t, "manager", "shipper")
	// This host is the master: <node_name> of its ossec.conf.
	install := t.TempDir()
	if err := os.MkdirAll(filepath.Join(install, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "<ossec_config>\n  <cluster>\n    <name>wazuh</name>\n    <node_name>manager-1</node_name>\n    <node_type>master</node_type>\n    <disabled>no</disabled>\n  </cluster>\n</ossec_config>\n"
	if err := os.WriteFile(filepath.Join(install, "etc", "ossec.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cfg.Manager.InstallDir = install
	r.rolling(t)
	lines, err := TurnCalls(context.Background(), TurnOptions{Cluster: r.deps, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"GET /siemctl-rollout/_doc/run", "[manager/manager-1; the turn now: indexer/indexer-1 (pending)]", "renew the lease", "done or failed"} {
		if !strings.Contains(all, want) {
			t.Errorf("calls lack %q:\n%s", want, all)
		}
	}
	if r.docs.Writes() != 2 {
		t.Fatalf("the dry run wrote: %d writes (2 were the setup's)", r.docs.Writes())
	}
}

// TestRunStatusClusterThroughAnotherNode: status learns the other nodes' addresses while
// indexer.url answers; with that node stopped it reads the record through the next one and says
// which (text and JSON).
func TestRunStatusClusterThroughAnotherNode(t *testing.T) {
	r := newClusterRig(t)
	r.rolling(t)
	other := indexertest.NewServer(t, r.docs.Routes(rollout.DocID))
	host := func(u string) string { return strings.TrimPrefix(u, "http://") }
	r.srv.Set("GET /_nodes/http", indexertest.Route{Body: []byte(`{"nodes":{"Xq1":{"name":"indexer-1","http":{"publish_address":"` + host(r.srv.URL) +
		`"}},"Xq2":{"name":"indexer-2","http":{"publish_address":"indexer-2/` + host(other.URL) + `"}}}}`)})
	r.deps.IndexerAt = func(u string) (rollout.API, error) { return r.ix.(*indexer.Client).At(u) }
	status := func(format string) (string, error) {
		io, _, out, _ := output.Test()
		err := runStatusCluster(context.Background(), &StatusOptions{Common: runs.Common{IO: io, Output: format}, ClusterMode: true, Cluster: r.deps})
		return out.String(), err
	}
	if out, err := status("json"); err != nil || strings.Contains(out, "answered_by") {
		t.Fatalf("status while indexer.url answers: %v\n%s", err, out)
	}
	r.srv.Close() // this host's node stopped
	out, err := status("table")
	if err != nil || !strings.Contains(out, "Read through indexer node indexer-2 ("+other.URL+"): indexer.url did not answer") || !strings.Contains(out, "phase rolling") {
		t.Fatalf("status with indexer.url down: %v\n%s", err, out)
	}
	out, err = status("json")
	var st ClusterStatus
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.AnsweredBy != "indexer-2 ("+other.URL+")" || len(st.Record.Order) != 6 {
		t.Fatalf("status json with indexer.url down: %v %+v\n%s", err, st.AnsweredBy, out)
	}
}

// TestInTurnNoGoPastStart: a turn that failed after its node ran the new version does not tell the
// operator to resume it (the deployment rolls back instead); any other failure does.
func TestInTurnNoGoPastStart(t *testing.T) {
	ctx := context.Background()
	_, o := rollingRig(t)
	var errOut strings.Builder
	err := InTurn(ctx, o, &errOut, func(context.Context, *rollout.Turn) error {
		return &engine.RolledBackError{RunID: "r1", Step: "indexer/rejoined", Cause: errors.New("node not back")}
	})
	if err == nil || strings.Contains(errOut.String(), "run the same command again") || !strings.Contains(errOut.String(), "after its node ran the new version") {
		t.Fatalf("no-go past the start: %v\n%s", err, errOut.String())
	}
	errOut.Reset()
	err = InTurn(ctx, o, &errOut, func(context.Context, *rollout.Turn) error { return errors.New("apt failed") })
	if err == nil || !strings.Contains(errOut.String(), "run the same command again on this host to resume it") {
		t.Fatalf("an ordinary failure: %v\n%s", err, errOut.String())
	}
}

// The cluster plan states what the indexer crosses (the master's release to the target, the nodes'
// OpenSearch from _nodes), and a 5.x target is a no-go naming the migration.
func TestRunPlanClusterIndexerVersions(t *testing.T) {
	r := newClusterRig(t)
	io, _, out, _ := output.Test()
	opts := &PlanOptions{Common: runs.Common{IO: io, Output: "table"}, To: "4.10.0", ClusterMode: true, Cluster: r.deps}
	if err := runPlanCluster(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Indexer versions (Wazuh release → its OpenSearch):", "indexer: Wazuh 4.9.0 = OpenSearch 2.13.0 → Wazuh 4.10.0 = OpenSearch 2.16.0",
		"running now (_nodes): indexer-1 OpenSearch", "old version reads the new data: no"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
	io, _, out, _ = output.Test()
	opts.Common, opts.To = runs.Common{IO: io, Output: "json"}, "5.0.0"
	err := runPlanCluster(context.Background(), opts)
	var rep ClusterPlan
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil || cli.ExitCode(err) != cli.ExitNoGo {
		t.Fatalf("%v %v (exit %d)", jerr, err, cli.ExitCode(err))
	}
	if rep.Verdict != "NO-GO" || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "no in-place upgrade") || !strings.Contains(rep.Problems[0], "legacy-indices.md") {
		t.Fatalf("%s %q", rep.Verdict, rep.Problems)
	}
}
