package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/runs"
	"github.com/siemctl/siemctl/internal/upgrade/roll"
	"github.com/siemctl/siemctl/internal/upgrade/roll/rolltest"
)

// TestRunPlanCluster: the order from the clusters' facts, the gates, the budget; a run in
// progress makes the plan NO-GO (exit 3).
func TestRunPlanCluster(t *testing.T) {
	r := rolltest.New(t)
	io, _, out, _ := output.Test()
	opts := &PlanOptions{Common: runs.Common{IO: io, Output: "json"}, To: "4.10.0", ClusterMode: true, Cluster: r.Deps}
	if err := runPlanCluster(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var rep roll.Plan
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
	if len(r.Srv.Requests()) != 3 || r.Docs.Writes() != 0 {
		t.Fatalf("plan wrote or asked more than the facts and the record: %d requests, %d writes", len(r.Srv.Requests()), r.Docs.Writes())
	}

	r.Rolling(t)
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
	r := rolltest.New(t)
	io, _, _, _ := output.Test()
	opts := &StatusOptions{Common: runs.Common{IO: io, Output: "table"}, ClusterMode: true, Cluster: r.Deps}
	if err := runStatusCluster(context.Background(), opts); !errors.Is(err, rollout.ErrNoRun) || !strings.Contains(err.Error(), "upgrade apply --cluster") {
		t.Fatalf("status without a run: %v", err)
	}
	r.Rolling(t)
	turn, err := r.Store().Take(context.Background(), rollout.Identity{Host: "host-a", Names: []string{"indexer/indexer-1"}}, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r.Clock = r.Clock.Add(30 * time.Second)
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
	r.Clock = r.Clock.Add(2 * time.Minute)
	io, _, out, _ = output.Test()
	opts.Common = runs.Common{IO: io, Output: "json"}
	if err := runStatusCluster(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var st roll.Status
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
	r.Cfg.Indexer.ConfigDir = filepath.Join(t.TempDir(), "missing")
	io, _, out, _ = output.Test()
	opts.Common = runs.Common{IO: io, Output: "json"}
	if err := runStatusCluster(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	st = roll.Status{}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.ThisHost != nil || !strings.Contains(st.ThisHostError, "node name") || len(st.Record.Order) != 6 {
		t.Fatalf("status json without an identity: %+v (%q)", st.ThisHost, st.ThisHostError)
	}
}

// TestRunStatusClusterThroughAnotherNode: status learns the other nodes' addresses while
// indexer.url answers; with that node stopped it reads the record through the next one and says
// which (text and JSON).
func TestRunStatusClusterThroughAnotherNode(t *testing.T) {
	r := rolltest.New(t)
	r.Rolling(t)
	other := indexertest.NewServer(t, r.Docs.Routes(rollout.DocID))
	host := func(u string) string { return strings.TrimPrefix(u, "http://") }
	r.Srv.Set("GET /_nodes/http", indexertest.Route{Body: []byte(`{"nodes":{"Xq1":{"name":"indexer-1","http":{"publish_address":"` + host(r.Srv.URL) +
		`"}},"Xq2":{"name":"indexer-2","http":{"publish_address":"indexer-2/` + host(other.URL) + `"}}}}`)})
	r.Deps.IndexerAt = func(u string) (rollout.API, error) { return r.IX.(*indexer.Client).At(u) }
	status := func(format string) (string, error) {
		io, _, out, _ := output.Test()
		err := runStatusCluster(context.Background(), &StatusOptions{Common: runs.Common{IO: io, Output: format}, ClusterMode: true, Cluster: r.Deps})
		return out.String(), err
	}
	if out, err := status("json"); err != nil || strings.Contains(out, "answered_by") {
		t.Fatalf("status while indexer.url answers: %v\n%s", err, out)
	}
	r.Srv.Close() // this host's node stopped
	out, err := status("table")
	if err != nil || !strings.Contains(out, "Read through indexer node indexer-2 ("+other.URL+"): indexer.url did not answer") || !strings.Contains(out, "phase rolling") {
		t.Fatalf("status with indexer.url down: %v\n%s", err, out)
	}
	out, err = status("json")
	var st roll.Status
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.AnsweredBy != "indexer-2 ("+other.URL+")" || len(st.Record.Order) != 6 {
		t.Fatalf("status json with indexer.url down: %v %+v\n%s", err, st.AnsweredBy, out)
	}
}

// The cluster plan states what the indexer crosses (the master's release to the target, the nodes'
// OpenSearch from _nodes), and a 5.x target is a no-go naming the migration.
func TestRunPlanClusterIndexerVersions(t *testing.T) {
	r := rolltest.New(t)
	io, _, out, _ := output.Test()
	opts := &PlanOptions{Common: runs.Common{IO: io, Output: "table"}, To: "4.10.0", ClusterMode: true, Cluster: r.Deps}
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
	var rep roll.Plan
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil || cli.ExitCode(err) != cli.ExitNoGo {
		t.Fatalf("%v %v (exit %d)", jerr, err, cli.ExitCode(err))
	}
	if rep.Verdict != "NO-GO" || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "no in-place upgrade") || !strings.Contains(rep.Problems[0], "legacy-indices.md") {
		t.Fatalf("%s %q", rep.Verdict, rep.Problems)
	}
}
