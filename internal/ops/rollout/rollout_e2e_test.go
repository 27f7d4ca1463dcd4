//go:build e2e

package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/lab/e2e"
)

// rolloutPortOffset: this package's single lab.
const rolloutPortOffset = 720

// TestE2ERollout: the coordination record in a real OpenSearch (the lab's, security on): two
// contenders race for one turn 20 times and exactly one wins each time; a holder whose lease ran
// out cannot write and its turn is taken over; then, with a record built from the lab's own
// facts, `siemctl upgrade plan --cluster`, `upgrade status --cluster` and `upgrade turn` (exit 7
// naming the holder while another host holds this host's turn).
func TestE2ERollout(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: rolloutPortOffset})
	ctx := context.Background()
	cfg, err := config.Load(config.LoadOptions{Path: filepath.Join(l.Dir, "siemctl.yaml"), ExplicitPath: true, LookupEnv: os.LookupEnv})
	if err != nil {
		t.Fatal(err)
	}
	client := func() (*factory.Clients, *indexer.Client) {
		st := factory.NewClients(ctx, cfg, factory.ClientOptions{LookupEnv: os.LookupEnv, Timeout: 30 * time.Second})
		t.Cleanup(func() { st.Close() })
		ix, err := st.NeedIndexer()
		if err != nil {
			t.Fatal(err)
		}
		return st, ix
	}
	stA, ixA := client()
	_, ixB := client()
	clk := &clock{t: time.Now().UTC()}
	a, b := rollout.NewStore(ixA), rollout.NewStore(ixB)
	a.Now, b.Now = clk.Now, clk.Now

	// No run yet: status says so (exit 1, naming how one is created).
	if r := l.Siemctl("upgrade", "status", "--cluster"); r.Code != 1 || !strings.Contains(r.Stderr, "upgrade apply --cluster") {
		t.Fatalf("status without a run: exit %d\n%s", r.Code, r.Stderr)
	}

	t.Run("race", func(t *testing.T) {
		rec := rollout.Record{RunID: "e2e-race", From: "4.9.0", Target: "4.10.0", CreatedBy: "e2e"}
		var names []string
		for i := range 21 {
			e := entry("indexer", fmt.Sprintf("n%02d", i), rollout.RoleIndexer)
			rec.Order = append(rec.Order, e)
			names = append(names, e.Name)
		}
		if _, err := a.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if _, err := b.SetPhase(ctx, rec.RunID, []rollout.Phase{rollout.PhaseApply}, rollout.PhaseRolling, ""); err != nil {
			t.Fatal(err)
		}
		ix, err := ixA.CatIndices(ctx, rollout.Index)
		if err != nil || len(ix) != 1 || ix[0].Pri != 1 {
			t.Fatalf("index %s: %+v %v", rollout.Index, ix, err)
		}
		stores := []*rollout.Store{a, b}
		for round := range 20 {
			var wg sync.WaitGroup
			start := make(chan struct{})
			turns := make([]*rollout.Turn, 2)
			errs := make([]error, 2)
			for c := range 2 {
				wg.Go(func() {
					<-start
					turns[c], errs[c] = stores[c].Take(ctx, host(fmt.Sprintf("contender-%d", c), names...), time.Minute)
				})
			}
			close(start)
			wg.Wait()
			winners := 0
			var won *rollout.Turn
			for c := range 2 {
				var nyt *rollout.NotYourTurnError
				switch {
				case errs[c] == nil:
					winners++
					won = turns[c]
				case errors.As(errs[c], &nyt) && nyt.Holder != "" && nyt.Holder != fmt.Sprintf("contender-%d", c):
				default:
					t.Fatalf("round %d: contender %d: %v", round, c, errs[c])
				}
			}
			if winners != 1 {
				t.Fatalf("round %d: %d winners, want exactly one", round, winners)
			}
			if err := won.Done(ctx); err != nil {
				t.Fatalf("round %d: done: %v", round, err)
			}
		}
		// The last entry: a holder whose lease ran out cannot write; its owner takes it over.
		holder, err := a.Take(ctx, host("holder", names[20]), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		clk.Add(6 * time.Second)
		before, _ := a.Load(ctx)
		if err := holder.Done(ctx); !errors.Is(err, rollout.ErrLeaseExpired) {
			t.Fatalf("expired holder's Done: %v, want ErrLeaseExpired", err)
		}
		if err := holder.Renew(ctx); !errors.Is(err, rollout.ErrLeaseExpired) {
			t.Fatalf("expired holder's Renew: %v, want ErrLeaseExpired", err)
		}
		after, _ := a.Load(ctx)
		if after.SeqNo != before.SeqNo || after.Order[20].State != rollout.Running {
			t.Fatalf("the expired holder wrote: seq_no %d → %d, state %s", before.SeqNo, after.SeqNo, after.Order[20].State)
		}
		other, err := b.Take(ctx, host("taker", names[20]), time.Minute)
		if err != nil || !other.Resumed {
			t.Fatalf("take-over of the expired lease: %v", err)
		}
		clk.Add(-6 * time.Second) // the old holder's clock says its lease lives: the record refuses it
		if err := holder.Done(ctx); !errors.Is(err, rollout.ErrLostTurn) {
			t.Fatalf("old holder after the take-over: %v, want ErrLostTurn", err)
		}
		clk.Add(6 * time.Second)
		if err := other.Done(ctx); err != nil {
			t.Fatal(err)
		}
		fin, _ := a.Load(ctx)
		if fin.Phase != rollout.PhaseFinish || fin.Counts()[rollout.Done] != 21 {
			t.Fatalf("after the race: phase %s counts %v", fin.Phase, fin.Counts())
		}
		if _, err := a.SetPhase(ctx, rec.RunID, []rollout.Phase{rollout.PhaseFinish}, rollout.PhaseDone, "e2e"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("commands", func(t *testing.T) {
		var plan struct {
			Verdict  string          `json:"verdict"`
			Order    []rollout.Entry `json:"order"`
			Problems []string        `json:"problems"`
			Calls    map[string][]string
		}
		// The plan judges apply --cluster's preflight gates: this single lab's node has no path.repo,
		// so the snapshot repository a cluster rollback restores from cannot be registered; the plan
		// says so, naming the node and the fix, and still shows the roll's order.
		r := l.Siemctl("upgrade", "plan", "--cluster", "--to", "4.10.0", "-o", "json")
		if r.Code != 3 || json.Unmarshal([]byte(r.Stdout), &plan) != nil {
			t.Fatalf("plan --cluster: exit %d, want 3 (the repository)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if names(plan.Order) != "indexer/node-1=indexer-cluster-manager manager/node01=manager-master dashboard/127.0.0.1=dashboard" || plan.Verdict != "NO-GO" ||
			len(plan.Problems) != 1 || !strings.Contains(plan.Problems[0], "preflight/snapshot-repository") || !strings.Contains(plan.Problems[0], "no path.repo on node-1") ||
			!strings.Contains(plan.Problems[0], "siemctl indexer repository prepare --yes") {
			t.Fatalf("plan order %s verdict %s problems %q", names(plan.Order), plan.Verdict, plan.Problems)
		}

		// The run's record from the lab's own facts, as upgrade apply --cluster makes it.
		s := rollout.NewStore(ixA)
		mg, mgErr := stA.Manager.Get()
		facts, err := rollout.Gather(ctx, cfg, ixA, mg, mgErr)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := rollout.NewRecord("e2e-run", "4.9.0", "4.10.0", "e2e", facts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, rec); err != nil {
			t.Fatalf("create over the ended race run: %v", err)
		}
		if _, err := s.SetPhase(ctx, rec.RunID, nil, rollout.PhaseRolling, ""); err != nil {
			t.Fatal(err)
		}
		if r := l.Siemctl("upgrade", "plan", "--cluster", "--to", "4.10.0"); r.Code != 3 || !strings.Contains(r.Stdout, "run e2e-run to 4.10.0 is in phase rolling") {
			t.Fatalf("plan with a run in progress: exit %d\n%s", r.Code, r.Stdout)
		}
		if r := l.Siemctl("upgrade", "turn"); r.Code != 0 || !strings.Contains(r.Stdout, "this host's turn: indexer/node-1") {
			t.Fatalf("turn: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		// Another host holds it (a misconfigured twin claiming the same node).
		twin, err := s.Take(ctx, host("twin-host", "indexer/node-1"), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		r = l.Siemctl("upgrade", "turn")
		if r.Code != 7 || !strings.Contains(r.Stderr, "it is indexer/node-1's (indexer-cluster-manager, running), held by host twin-host until") ||
			!strings.Contains(r.Stderr, "siemctl upgrade status --cluster") {
			t.Fatalf("turn while held: exit %d\n%s", r.Code, r.Stderr)
		}
		var st struct {
			Record  rollout.Record `json:"record"`
			Current string         `json:"current"`
		}
		r = l.Siemctl("upgrade", "status", "--cluster", "-o", "json")
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &st) != nil || st.Current != "indexer/node-1" || st.Record.Holder == nil || st.Record.Holder.Host != "twin-host" {
			t.Fatalf("status --cluster: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if err := twin.Done(ctx); err != nil {
			t.Fatal(err)
		}
		r = l.Siemctl("upgrade", "status", "--cluster")
		if r.Code != 0 || !strings.Contains(r.Stdout, "Turn: manager/node01's, not held") || !strings.Contains(r.Stdout, "1 done, 0 running, 0 failed, 2 pending") {
			t.Fatalf("status --cluster table: exit %d\n%s", r.Code, r.Stdout)
		}
		if r := l.Siemctl("upgrade", "turn", "-o", "json"); r.Code != 0 || !strings.Contains(r.Stdout, `"name": "manager/node01"`) {
			t.Fatalf("turn after the indexer: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}
