package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newStore(t *testing.T) (*rollout.Store, *indexertest.Documents, *clock) {
	t.Helper()
	docs := indexertest.NewDocuments(rollout.Index)
	srv := indexertest.NewServer(t, docs.Routes(rollout.DocID))
	clk := &clock{t: time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)}
	s := rollout.NewStore(srv.Client(t))
	s.Now = clk.Now
	return s, docs, clk
}

func entry(kind, node string, role rollout.Role) rollout.Entry {
	return rollout.Entry{Name: rollout.Key(kind, node), Node: node, Role: role, Components: []string{kind}}
}

func threeNodeRecord() rollout.Record {
	return rollout.Record{RunID: "20261128T010000Z-abc123", From: "4.9.0", Target: "4.10.0", CreatedBy: "indexer-1",
		ElectedManager: "indexer-3",
		Order: []rollout.Entry{
			entry("indexer", "indexer-1", rollout.RoleIndexer), entry("indexer", "indexer-2", rollout.RoleIndexer),
			entry("indexer", "indexer-3", rollout.RoleIndexerManager),
			entry("manager", "manager-1", rollout.RoleManagerMaster), entry("manager", "manager-2", rollout.RoleManagerWorker),
			entry("dashboard", "127.0.0.31", rollout.RoleDashboard),
		}}
}

func host(name string, nodes ...string) rollout.Identity {
	return rollout.Identity{Host: name, Names: nodes}
}

// rollingStore is newStore with threeNodeRecord's run created and rolling.
func rollingStore(t *testing.T) (*rollout.Store, *indexertest.Documents, *clock) {
	t.Helper()
	s, docs, clk := newStore(t)
	rolling(t, s, threeNodeRecord())
	return s, docs, clk
}

// doneFirst takes the first entry's turn and marks it done.
func doneFirst(t *testing.T, s *rollout.Store) {
	t.Helper()
	if err := takeFirst(t, s).Done(context.Background()); err != nil {
		t.Fatalf("Done: %v", err)
	}
}

// takeFirst takes the first entry's turn (indexer/indexer-1, host h1) with a minute's lease.
func takeFirst(t *testing.T, s *rollout.Store) *rollout.Turn {
	t.Helper()
	turn, err := s.Take(context.Background(), host("h1", "indexer/indexer-1"), time.Minute)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return turn
}

func rolling(t *testing.T, s *rollout.Store, rec rollout.Record) rollout.Record {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Create(ctx, rec); err != nil {
		t.Fatalf("Create: %v", err)
	}
	r, err := s.SetPhase(ctx, rec.RunID, []rollout.Phase{rollout.PhaseApply}, rollout.PhaseRolling, "preflight passed")
	if err != nil {
		t.Fatalf("SetPhase: %v", err)
	}
	return r
}

// TestCreateLoad: a run is created once, read back as written, and refused while it runs; an
// ended run is replaced.
func TestCreateLoad(t *testing.T) {
	ctx := context.Background()
	s, docs, _ := newStore(t)
	if _, err := s.Load(ctx); !errors.Is(err, rollout.ErrNoRun) {
		t.Fatalf("Load before any run: %v, want ErrNoRun", err)
	}
	rec := threeNodeRecord()
	created, err := s.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.RunID != rec.RunID || got.Phase != rollout.PhaseApply || len(got.Order) != 6 || got.Order[2].Role != rollout.RoleIndexerManager ||
		got.Order[0].State != rollout.Pending || got.SeqNo != created.SeqNo || got.Created.IsZero() {
		t.Fatalf("loaded %+v", got)
	}
	var stored map[string]any
	if err := json.Unmarshal(docs.Source(rollout.DocID), &stored); err != nil || stored["phase"] != "apply" || stored["target"] != "4.10.0" {
		t.Fatalf("stored %s (%v)", docs.Source(rollout.DocID), err)
	}
	again := rec
	again.RunID = "other"
	var exists *rollout.RunExistsError
	if _, err := s.Create(ctx, again); !errors.As(err, &exists) || exists.RunID != rec.RunID || exists.Phase != rollout.PhaseApply {
		t.Fatalf("second Create: %v, want RunExistsError naming %s", err, rec.RunID)
	}
	if _, err := s.SetPhase(ctx, rec.RunID, []rollout.Phase{rollout.PhaseRolling}, rollout.PhaseFinish, ""); !errors.Is(err, rollout.ErrPhase) {
		t.Fatalf("SetPhase from the wrong phase: %v, want ErrPhase", err)
	}
	if _, err := s.SetPhase(ctx, rec.RunID, nil, rollout.PhaseDone, "finished"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, again); err != nil {
		t.Fatalf("Create over an ended run: %v", err)
	}
	if got, _ := s.Load(ctx); got.RunID != "other" || got.Phase != rollout.PhaseApply {
		t.Fatalf("after replacing: %+v", got)
	}
	bad := rec
	bad.Order = []rollout.Entry{entry("manager", "m", rollout.RoleManagerMaster), entry("indexer", "i", rollout.RoleIndexer)}
	if _, err := s.Create(ctx, bad); !errors.Is(err, rollout.ErrInvalid) {
		t.Fatalf("Create with indexers after the master: %v, want ErrInvalid", err)
	}
}

// TestTakeTurns: only the host whose entry is first takes the turn; others are told whose it is;
// the roll goes entry by entry to the finish phase.
func TestTakeTurns(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newStore(t)
	if _, err := s.Create(ctx, threeNodeRecord()); err != nil {
		t.Fatal(err)
	}
	var nyt *rollout.NotYourTurnError
	if _, err := s.Take(ctx, host("h1", "indexer/indexer-1"), time.Minute); !errors.As(err, &nyt) || nyt.Phase != rollout.PhaseApply {
		t.Fatalf("Take during apply: %v, want NotYourTurn in phase apply", err)
	}
	if _, err := s.SetPhase(ctx, "", []rollout.Phase{rollout.PhaseApply}, rollout.PhaseRolling, ""); err != nil {
		t.Fatal(err)
	}
	_, err := s.Take(ctx, host("h2", "indexer/indexer-2"), time.Minute)
	if !errors.As(err, &nyt) || nyt.Whose != "indexer/indexer-1" || nyt.State != rollout.Pending || nyt.Holder != "" {
		t.Fatalf("Take out of turn: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "it is indexer/indexer-1's (indexer, pending), not held") || !strings.Contains(msg, "indexer/indexer-2: pending") {
		t.Fatalf("message %q", msg)
	}
	order := []rollout.Identity{host("h1", "indexer/indexer-1"), host("h2", "indexer/indexer-2"), host("h3", "indexer/indexer-3"),
		host("m1", "manager/manager-1"), host("m2", "manager/manager-2"), host("d1", "dashboard/127.0.0.31")}
	for i, who := range order {
		turn, err := s.Take(ctx, who, time.Minute)
		if err != nil {
			t.Fatalf("turn %d %s: %v", i, who.Host, err)
		}
		if turn.Entry().State != rollout.Running || turn.Entry().Attempts != 1 || turn.Resumed {
			t.Fatalf("turn %d entry %+v resumed %v", i, turn.Entry(), turn.Resumed)
		}
		if i+1 < len(order) {
			if _, err := s.Take(ctx, order[i+1], time.Minute); !errors.As(err, &nyt) || nyt.Holder != who.Host || nyt.State != rollout.Running {
				t.Fatalf("next host while %s holds: %v", who.Host, err)
			}
		}
		clk.Add(10 * time.Second)
		if err := turn.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if want := clk.Now().Add(time.Minute); !turn.Expiry().Equal(want) {
			t.Fatalf("renewed expiry %v, want %v", turn.Expiry(), want)
		}
		if err := turn.Done(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := s.Load(ctx)
	if rec.Phase != rollout.PhaseFinish || rec.Holder != nil || rec.Counts()[rollout.Done] != 6 || rec.Current() != -1 {
		t.Fatalf("after the roll: phase %s holder %+v counts %v", rec.Phase, rec.Holder, rec.Counts())
	}
}

// TestLease: a holder whose lease ran out cannot write; another contender takes over; the same
// host resumes its own turn at once after a kill -9.
func TestLease(t *testing.T) {
	ctx := context.Background()
	s, docs, clk := rollingStore(t)
	a, err := s.Take(ctx, host("a", "indexer/indexer-1"), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Same host, another process (the first was killed): resumes at once.
	a2, err := s.Take(ctx, host("a", "indexer/indexer-1"), 30*time.Second)
	if err != nil || !a2.Resumed || a2.Entry().Attempts != 2 {
		t.Fatalf("resume by the same host: %+v %v", a2, err)
	}
	// The first process's token is no longer the holder's.
	if err := a.Renew(ctx); !errors.Is(err, rollout.ErrLostTurn) {
		t.Fatalf("old process renews: %v, want ErrLostTurn", err)
	}
	// Another host claiming the same entry while the lease lives: refused.
	var nyt *rollout.NotYourTurnError
	if _, err := s.Take(ctx, host("b", "indexer/indexer-1"), 30*time.Second); !errors.As(err, &nyt) || nyt.Holder != "a" {
		t.Fatalf("take of a live lease: %v", err)
	}
	clk.Add(31 * time.Second)
	writes := docs.Writes()
	if err := a2.Done(ctx); !errors.Is(err, rollout.ErrLeaseExpired) {
		t.Fatalf("Done after the lease: %v, want ErrLeaseExpired", err)
	}
	if docs.Writes() != writes {
		t.Fatalf("an expired holder wrote")
	}
	b, err := s.Take(ctx, host("b", "indexer/indexer-1"), 30*time.Second)
	if err != nil || !b.Resumed {
		t.Fatalf("take-over of an expired lease: %+v %v", b, err)
	}
	if err := b.Fail(ctx, errors.New("indexer-1 did not rejoin within 5m0s")); err != nil {
		t.Fatal(err)
	}
	rec, _ := s.Load(ctx)
	if rec.Phase != rollout.PhaseFailed || rec.Order[0].State != rollout.Failed || rec.Order[0].LastError == "" || rec.Holder != nil {
		t.Fatalf("after Fail: %+v", rec)
	}
	if _, err := s.Take(ctx, host("c", "indexer/indexer-2"), time.Minute); !errors.As(err, &nyt) || nyt.Phase != rollout.PhaseFailed {
		t.Fatalf("next host after a failure: %v", err)
	}
	// The failed entry's host resumes it: the run is rolling again.
	r, err := s.Take(ctx, host("b", "indexer/indexer-1"), time.Minute)
	if err != nil || r.Entry().Attempts != 4 {
		t.Fatalf("resume of a failed entry: %v", err)
	}
	if rec, _ := s.Load(ctx); rec.Phase != rollout.PhaseRolling {
		t.Fatalf("phase %s after resuming", rec.Phase)
	}
	if _, err := s.Take(ctx, host("b", "indexer/indexer-1"), time.Millisecond); !errors.Is(err, rollout.ErrInvalid) {
		t.Fatalf("a 1ms lease: %v, want ErrInvalid", err)
	}
}

// TestRace: contenders racing for one turn through the real HTTP path: exactly one wins each of
// 20 rounds.
func TestRace(t *testing.T) {
	ctx := context.Background()
	s, docs, _ := newStore(t)
	rec := threeNodeRecord()
	rec.Order = nil
	var names []string
	for i := range 20 {
		e := entry("indexer", fmt.Sprintf("n%02d", i), rollout.RoleIndexer)
		rec.Order = append(rec.Order, e)
		names = append(names, e.Name)
	}
	rolling(t, s, rec)
	for round := range 20 {
		var wg sync.WaitGroup
		turns := make([]*rollout.Turn, 3)
		errs := make([]error, 3)
		for c := range 3 {
			wg.Go(func() { turns[c], errs[c] = s.Take(ctx, host(fmt.Sprintf("c%d", c), names...), time.Minute) })
		}
		wg.Wait()
		var won *rollout.Turn
		for c := range 3 {
			var nyt *rollout.NotYourTurnError
			switch {
			case errs[c] == nil && won == nil:
				won = turns[c]
			case errs[c] == nil:
				t.Fatalf("round %d: two winners", round)
			case !errors.As(errs[c], &nyt) || nyt.Holder == "":
				t.Fatalf("round %d: loser's error %v", round, errs[c])
			}
		}
		if won == nil {
			t.Fatalf("round %d: no winner", round)
		}
		if err := won.Done(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if docs.Refused == 0 {
		t.Log("no write lost a race (the contenders did not overlap); the CAS path was still taken")
	}
}

// TestRun: work under a turn marks it done or failed, and is stopped when the turn is lost.
func TestRun(t *testing.T) {
	ctx := context.Background()
	s, docs, _ := rollingStore(t)
	turn := takeFirst(t, s)
	if err := turn.Run(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	turn, err := s.Take(ctx, host("h2", "indexer/indexer-2"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("gate indexer/rejoined: no-go")
	if err := turn.Run(ctx, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Run: %v", err)
	}
	rec, _ := s.Load(ctx)
	if rec.Order[0].State != rollout.Done || rec.Order[1].State != rollout.Failed || rec.Order[1].LastError != boom.Error() {
		t.Fatalf("states %v / %v %q", rec.Order[0].State, rec.Order[1].State, rec.Order[1].LastError)
	}
	// Lost mid-work: another writer replaces the holder; the next renewal fails and work stops.
	turn, err = s.Take(ctx, host("h2", "indexer/indexer-2"), 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := s.Load(ctx)
	cur.Holder.Token = "someone-else"
	b, _ := json.Marshal(cur)
	docs.Overwrite(rollout.DocID, b)
	err = turn.Run(ctx, func(wctx context.Context) error {
		<-wctx.Done()
		return context.Cause(wctx)
	})
	if !errors.Is(err, rollout.ErrLostTurn) {
		t.Fatalf("Run after losing the turn: %v, want ErrLostTurn", err)
	}
	if rec, _ := s.Load(ctx); rec.Holder == nil || rec.Holder.Token != "someone-else" || rec.Order[1].State != rollout.Running {
		t.Fatalf("the lost turn wrote: %+v", rec)
	}
}

// TestWait: a host waits for its turn and takes it when the previous one is done; it does not
// wait for a failed run.
func TestWait(t *testing.T) {
	ctx := context.Background()
	s, _, _ := rollingStore(t)
	first := takeFirst(t, s)
	polls := 0
	sleep := func(context.Context, time.Duration) error {
		polls++
		if polls == 2 {
			return first.Done(ctx)
		}
		return nil
	}
	turn, err := s.Wait(ctx, host("h2", "indexer/indexer-2"), time.Minute, time.Second, sleep)
	if err != nil || turn.Entry().Name != "indexer/indexer-2" || polls != 2 {
		t.Fatalf("Wait: %v after %d polls", err, polls)
	}
	if err := turn.Fail(ctx, errors.New("no")); err != nil {
		t.Fatal(err)
	}
	var nyt *rollout.NotYourTurnError
	if _, err := s.Wait(ctx, host("h3", "indexer/indexer-3"), time.Minute, time.Second, func(context.Context, time.Duration) error {
		t.Fatal("waited for a failed run")
		return nil
	}); !errors.As(err, &nyt) || nyt.Phase != rollout.PhaseFailed {
		t.Fatalf("Wait on a failed run: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Wait(cctx, host("h3", "indexer/indexer-3"), time.Minute, time.Second, nil); err == nil {
		t.Fatal("Wait with a cancelled context returned a turn")
	}
}

// TestReOrder: a new elected cluster manager becomes the last pending indexer; done entries stay.
func TestReOrder(t *testing.T) {
	ctx := context.Background()
	s, _, _ := rollingStore(t)
	doneFirst(t, s)
	rec, changed, err := s.ReOrder(ctx, "indexer-2")
	if err != nil || !changed {
		t.Fatalf("ReOrder: changed %v err %v", changed, err)
	}
	var got []string
	for _, e := range rec.Order[:3] {
		got = append(got, fmt.Sprintf("%s:%s:%s", e.Node, e.Role, e.State))
	}
	want := "indexer-1:indexer:done indexer-3:indexer:pending indexer-2:indexer-cluster-manager:pending"
	if strings.Join(got, " ") != want || rec.ElectedManager != "indexer-2" || rec.Order[3].Node != "manager-1" {
		t.Fatalf("order %s, want %s", strings.Join(got, " "), want)
	}
	if _, changed, err := s.ReOrder(ctx, "indexer-2"); err != nil || changed {
		t.Fatalf("second ReOrder: changed %v err %v", changed, err)
	}
	var nyt *rollout.NotYourTurnError
	if _, err := s.Take(ctx, host("h2", "indexer/indexer-2"), time.Minute); !errors.As(err, &nyt) || nyt.Whose != "indexer/indexer-3" {
		t.Fatalf("the new elected one took its turn before indexer-3: %v", err)
	}
}

// TestTakeReOrders: with Store.Elected, a take recomputes the order for the elected cluster
// manager now, in the same write.
func TestTakeReOrders(t *testing.T) {
	ctx := context.Background()
	s, _, _ := rollingStore(t)
	elected := "indexer-3"
	s.Elected = func(context.Context) (string, error) { return elected, nil }
	doneFirst(t, s)
	elected = "indexer-2" // indexer-3 restarted for another reason: indexer-2 was elected
	var nyt *rollout.NotYourTurnError
	if _, err := s.Take(ctx, host("h2", "indexer/indexer-2"), time.Minute); !errors.As(err, &nyt) || nyt.Whose != "indexer/indexer-3" {
		t.Fatalf("the newly elected indexer-2 took a turn before indexer-3: %v", err)
	}
	rec, _ := s.Load(ctx)
	if rec.ElectedManager != "indexer-2" || rec.Order[2].Node != "indexer-2" || rec.Order[2].Role != rollout.RoleIndexerManager {
		t.Fatalf("order not recomputed: %+v", rec.Order[:3])
	}
	if _, err := s.Take(ctx, host("h3", "indexer/indexer-3"), time.Minute); err != nil {
		t.Fatalf("indexer-3 now: %v", err)
	}
}

// TestKeepThroughOutage: renewals that do not reach the cluster (the node this host talks to is
// restarting) are tried again while the lease lives; the work goes on and ends done.
func TestKeepThroughOutage(t *testing.T) {
	ctx := context.Background()
	docs := indexertest.NewDocuments(rollout.Index)
	routes := docs.Routes(rollout.DocID)
	get := routes["GET /"+rollout.Index+"/_doc/"+rollout.DocID].Handler
	var mu sync.Mutex
	failing, failed, renewedAfter := 0, 0, make(chan struct{})
	routes["GET /"+rollout.Index+"/_doc/"+rollout.DocID] = indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		down := failing > 0
		if down {
			failing--
			failed++
		} else if failed > 0 {
			failed = -1 << 30 // signal once
			close(renewedAfter)
		}
		mu.Unlock()
		if down {
			w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("OpenSearch Security not initialized."))
			return
		}
		get(w, r)
	}}
	srv := indexertest.NewServer(t, routes)
	s := rollout.NewStore(srv.Client(t))
	rolling(t, s, threeNodeRecord())
	turn, err := s.Take(ctx, host("h1", "indexer/indexer-1"), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	err = turn.Run(ctx, func(wctx context.Context) error {
		mu.Lock()
		failing = 2 // the next two reads fail, as while the local node restarts
		mu.Unlock()
		select {
		case <-renewedAfter:
			return nil
		case <-wctx.Done():
			return context.Cause(wctx)
		}
	})
	if err != nil {
		t.Fatalf("Run through an outage: %v", err)
	}
	if rec, _ := s.Load(ctx); rec.Order[0].State != rollout.Done {
		t.Fatalf("entry %s after the outage", rec.Order[0].State)
	}
}

// TestCheck: the read-only answer is the one a take would give, the order recomputed as it would
// be, and nothing is written.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	s, docs, _ := rollingStore(t)
	doneFirst(t, s)
	s.Elected = func(context.Context) (string, error) { return "indexer-2", nil }
	writes := docs.Writes()
	if e, _, err := s.Check(ctx, host("h3", "indexer/indexer-3")); err != nil || e.Name != "indexer/indexer-3" {
		t.Fatalf("Check for indexer-3 after indexer-2 was elected: %+v %v", e, err)
	}
	var nyt *rollout.NotYourTurnError
	if _, _, err := s.Check(ctx, host("h2", "indexer/indexer-2")); !errors.As(err, &nyt) || nyt.Whose != "indexer/indexer-3" {
		t.Fatalf("Check for the elected one: %v", err)
	}
	if docs.Writes() != writes {
		t.Fatal("Check wrote")
	}
}
