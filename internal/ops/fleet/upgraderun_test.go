package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
)

type upgradeEnv struct {
	srv   *managertest.Server
	api   *manager.Client
	now   time.Time
	state string
}

// newUpgradeEnv is a 4.10.0 manager with 20 agents at 4.9.0 (10 active, 5 disconnected, 5 never
// connected).
func newUpgradeEnv(t *testing.T) *upgradeEnv {
	t.Helper()
	e := &upgradeEnv{now: time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC), state: t.TempDir()}
	e.srv = managertest.New(t, managertest.Config{Version: "4.10.0", Agents: managertest.GenerateAgents(20), Now: func() time.Time { return e.now }})
	c, err := manager.New(manager.Options{URL: e.srv.URL, Username: e.srv.Username(), Password: e.srv.Password(), HTTPClient: e.srv.Client(),
		Clock: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	e.api = c
	return e
}

func (e *upgradeEnv) runner() *Runner {
	return &Runner{API: e.api, StateDir: e.state, Now: func() time.Time { return e.now }, Poll: 5 * time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error { e.now = e.now.Add(d); return ctx.Err() }}
}

func (e *upgradeEnv) plan(t *testing.T, o UpgradeWaveOptions) UpgradePlan {
	t.Helper()
	if o.Waves == nil {
		o.Waves = DefaultUpgradeWaves
	}
	if o.InFlight == 0 {
		o.InFlight = 2
	}
	if o.AgentWait == 0 {
		o.AgentWait = 10 * time.Minute
	}
	p, err := PlanUpgrade(context.Background(), e.api, manager.Version{Major: 4, Minor: 10}, manager.Version{Major: 4, Minor: 10}, UpgradeSelector{}, o, 500)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var upgraded = managertest.TaskOutcome{Status: "Updated", Version: "Wazuh v4.10.0"}

func TestUpgradePlan(t *testing.T) {
	e := newUpgradeEnv(t)
	p := e.plan(t, UpgradeWaveOptions{Canary: 1, Waves: []float64{0.5, 1}})
	if len(p.Eligible) != 10 || len(p.Pending) != 5 || len(p.NotEligible) != 6 {
		t.Fatalf("eligible %d pending %d not eligible %d", len(p.Eligible), len(p.Pending), len(p.NotEligible))
	}
	reasons := map[string]int{}
	for _, a := range p.NotEligible {
		reasons[a.Reason]++
	}
	if reasons[ReasonManager] != 1 || reasons[ReasonNotActive] != 5 {
		t.Errorf("reasons %v", reasons)
	}
	// Canary 1, then up to 50% (5 agents: 4 more), then the rest.
	if len(p.Waves) != 3 || len(p.Waves[0]) != 1 || len(p.Waves[1]) != 4 || len(p.Waves[2]) != 5 {
		t.Errorf("waves %v", p.Waves)
	}
	// Two in flight: 1 + 2 + 3 requests.
	if p.Requests != 6 {
		t.Errorf("requests %d", p.Requests)
	}
	// A target newer than the manager is refused before anything.
	if _, err := PlanUpgrade(context.Background(), e.api, manager.Version{Major: 4, Minor: 11}, manager.Version{Major: 4, Minor: 10}, UpgradeSelector{}, p.Options, 500); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("newer target: %v", err)
	}
	for id, want := range map[string]string{"5.0.0/4.13.2": ReasonBelow414, "4.10.0/2.1.0": ReasonTooOld, "4.10.0/4.10.0": ReasonNewer} {
		tv, av, _ := strings.Cut(id, "/")
		target, _ := manager.ParseVersion(tv)
		a := manager.Agent{ID: "001", Status: manager.AgentActive, Version: "Wazuh v" + av}
		if got := Eligibility(a, target); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if got := Eligibility(manager.Agent{ID: "001", Status: manager.AgentActive, Version: "Wazuh v4.9.0", OS: manager.AgentOS{Platform: "solaris"}}, manager.Version{Major: 4, Minor: 10}); got != ReasonNoWPK {
		t.Errorf("solaris: %q", got)
	}
}

func TestUpgradeRunWaves(t *testing.T) {
	e := newUpgradeEnv(t)
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome { return upgraded })
	r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Canary: 1}), e.now)
	if err := e.runner().Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	c := r.Counts()
	if r.State != RunDone || c[AgentUpgraded] != 10 || c[AgentPending] != 5 || !strings.Contains(r.Reason, "5 disconnected") {
		t.Errorf("state %s %v %s", r.State, c, r.Reason)
	}
	// Never more than two agents in one request (the in-flight limit), upgrade_result read in bulk.
	for _, s := range e.srv.SeenPath("PUT /agents/upgrade") {
		if n := strings.Count(s, "%2C") + 1; n > 2 || !strings.Contains(s, "upgrade_version=4.10.0") {
			t.Errorf("request %s", s)
		}
	}
	if got, err := LoadUpgradeRun(e.state, ""); err != nil || got.State != RunDone || got.Requests != r.Requests {
		t.Errorf("saved run: %+v %v", got, err)
	}
	// The disconnected agents come back: resume sends them in a wave of their own.
	for _, a := range r.Agents {
		if a.State == AgentPending {
			e.srv.SetAgentStatus(a.ID, "active")
		}
	}
	rn := e.runner()
	if err := rn.Resume(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := rn.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if c := r.Counts(); c[AgentUpgraded] != 15 || c[AgentPending] != 0 || r.State != RunDone {
		t.Errorf("after resume: %s %v", r.State, c)
	}
}

func TestUpgradeRunCanaryStops(t *testing.T) {
	e := newUpgradeEnv(t)
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome {
		return managertest.TaskOutcome{Status: "Error", ErrorMsg: "Send lock restart error"}
	})
	r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Canary: 1}), e.now)
	if err := r.StartJournal(e.state, e.now); err != nil {
		t.Fatal(err)
	}
	err := e.runner().Run(context.Background(), r)
	if !errors.Is(err, ErrWaveFailed) || r.State != RunStopped {
		t.Fatalf("canary: %v %s", err, r.State)
	}
	f := r.Failures()
	if len(f) != 1 || f[0].Failure.Code != 1828 || !strings.Contains(f[0].Failure.Fix, "--concurrency") || r.Waves[1].State != WavePending {
		t.Fatalf("failures %+v waves %+v", f, r.Waves)
	}
	// The fix; resume sends the canary again and finishes.
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome { return upgraded })
	rn := e.runner()
	if err := rn.Resume(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := rn.Run(context.Background(), r); err != nil || r.Counts()[AgentUpgraded] != 10 {
		t.Fatalf("resume: %v %v", err, r.Counts())
	}
	// The journal keeps what the state forgot: the canary's failure, its cause and the stop, then
	// the resume and the waves that passed; one line per transition, numbered.
	evs, err := ReadJournal(e.state, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, ev := range evs {
		if ev.Seq != i+1 || ev.Time.IsZero() {
			t.Errorf("event %d: seq %d, time %s", i, ev.Seq, ev.Time)
		}
		if len(types) == 0 || types[len(types)-1] != ev.Type {
			types = append(types, ev.Type)
		}
	}
	want := "run-start send agents-failed wave-fail run-stop run-resume send wave-pass send wave-pass send wave-pass run-end"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("journal:\n got %s\nwant %s", got, want)
	}
	if f := evs[2].FailedAgents; len(f) != 1 || f[0].Cause.Code != 1828 || evs[2].Wave != 1 {
		t.Errorf("the canary's failure: %+v", evs[2])
	}
	if last := evs[len(evs)-1]; last.Upgraded != 10 || last.Pending != 5 || last.State != RunDone || r.JournalSeq != len(evs) {
		t.Errorf("run-end %+v, %d events, the run's seq %d", last, len(evs), r.JournalSeq)
	}
}

func TestUpgradeRunEvidence(t *testing.T) {
	e := newUpgradeEnv(t)
	first := true
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome {
		defer func() { first = false }()
		if first {
			// Reported Timeout, but the agent is back with the target version.
			return managertest.TaskOutcome{Status: "Timeout", Version: "Wazuh v4.10.0"}
		}
		// Dropped mid-upgrade: the task stays Updating, the agent never comes back.
		return managertest.TaskOutcome{Status: "Updating", Disconnect: true}
	})
	r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Canary: 1, MaxFailed: 0, AgentWait: time.Minute}), e.now)
	err := e.runner().Run(context.Background(), r)
	canary := r.Agents[r.Waves[0].Agents[0]]
	if canary.State != AgentUpgraded || !strings.Contains(canary.Evidence, "the task says Timeout") {
		t.Errorf("timeout but upgraded: %+v", canary)
	}
	f := r.Failures()
	if !errors.Is(err, ErrWaveFailed) || len(f) == 0 || !strings.Contains(f[0].Failure.Cause, "disconnected during the upgrade") {
		t.Errorf("dropped: %v %+v", err, f)
	}
}

func TestParseWavesAndMaxFailed(t *testing.T) {
	if w, err := ParseWaves("1%,10%,50%,100%"); err != nil || len(w) != 4 || w[3] != 1 {
		t.Errorf("%v %v", w, err)
	}
	for _, bad := range []string{"10%,5%,100%", "50%", "1,100", "0%,100%", ""} {
		if _, err := ParseWaves(bad); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%q accepted", bad)
		}
	}
	if n, pct, err := ParseMaxFailed("2%"); err != nil || n != 2 || !pct {
		t.Errorf("2%%: %v %v %v", n, pct, err)
	}
	for _, bad := range []string{"-1", "1.5", "200%", "x"} {
		if _, _, err := ParseMaxFailed(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := (UpgradeWaveOptions{MaxFailed: 10, MaxFailedPct: true}).Allowed(55); got != 5 {
		t.Errorf("10%% of 55: %d", got)
	}
}

// twoNodeEnv is a master with 12 agents, every other one reporting to worker1, each of whose
// upgrades succeeds.
func twoNodeEnv(t *testing.T) *upgradeEnv {
	t.Helper()
	e := &upgradeEnv{now: time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC), state: t.TempDir()}
	agents := managertest.GenerateAgents(12)
	for i := range agents {
		agents[i].NodeName = []string{"master-node", "worker1"}[i%2]
	}
	e.srv = managertest.New(t, managertest.Config{Version: "4.10.0", Agents: agents, Now: func() time.Time { return e.now }})
	c, err := manager.New(manager.Options{URL: e.srv.URL, Username: e.srv.Username(), Password: e.srv.Password(), HTTPClient: e.srv.Client(),
		Clock: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	e.api = c
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome { return upgraded })
	return e
}

// A worker disconnected from the master (3022 from the master): only its agents wait, named with the node; the
// master's agents upgrade; every request names its node.
func TestUpgradeRunWorkerDown(t *testing.T) {
	e := twoNodeEnv(t)
	e.srv.SetNodeDown("worker1", true)
	r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Canary: 1, InFlight: 8}), e.now)
	if err := e.runner().Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if r.State != RunDone || !strings.Contains(r.Reason, "of node worker1, not connected to the master (3022)") {
		t.Errorf("run: %s %s", r.State, r.Reason)
	}
	byNode := map[string]map[string]int{}
	for _, a := range r.Agents {
		if byNode[a.Node] == nil {
			byNode[a.Node] = map[string]int{}
		}
		byNode[a.Node][a.State]++
		if a.Node == "worker1" && a.State == AgentPending && a.Failure != nil && (a.Failure.Code != 3022 || !strings.Contains(a.Failure.Cause, "worker1")) {
			t.Errorf("%s: %+v", a.ID, a.Failure)
		}
	}
	if byNode["worker1"][AgentPending] == 0 || byNode["worker1"][AgentUpgraded] != 0 || byNode["master-node"][AgentUpgraded] == 0 || byNode["master-node"][AgentFailed] != 0 {
		t.Errorf("by node: %v", byNode)
	}
	// The worker reconnects: resume sends its share.
	e.srv.SetNodeDown("worker1", false)
	rn := e.runner()
	if err := rn.Resume(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := rn.Run(context.Background(), r); err != nil || r.Counts()[AgentFailed] != 0 {
		t.Fatalf("resume: %v %v", err, r.Counts())
	}
	for _, a := range r.Agents {
		if a.Node == "worker1" && a.State != AgentUpgraded && a.State != AgentPending {
			t.Errorf("%s on worker1: %s", a.ID, a.State)
		}
	}
	for _, s := range e.srv.SeenPath("PUT /agents/upgrade") {
		if !strings.Contains(s, "node_name=") {
			t.Errorf("request without its node: %s", s)
		}
	}
}

// A request holding agents of a cut worker beside others (the run's record of their node is stale):
// the master answers a failed item 3022 naming the node, and only that node's agents wait.
func TestUpgradeRunWorkerDownMixedRequest(t *testing.T) {
	e := twoNodeEnv(t)
	r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Waves: []float64{1}, InFlight: 50}), e.now)
	onWorker := map[string]bool{}
	for id, a := range r.Agents {
		if a.Node == "worker1" {
			onWorker[id] = a.State == AgentPlanned
			a.Node = "master-node"
		}
	}
	e.srv.SetNodeDown("worker1", true)
	if err := e.runner().Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := len(e.srv.SeenPath("PUT /agents/upgrade")); got != 1 {
		t.Fatalf("%d requests, want the one of master-node", got)
	}
	held := 0
	for id, planned := range onWorker {
		a := r.Agents[id]
		if !planned {
			continue
		}
		held++
		if a.State != AgentPending || a.Node != "worker1" || a.Failure == nil || a.Failure.Code != 3022 || !strings.Contains(a.Failure.Cause, "worker1") {
			t.Errorf("%s: %s %s %+v", id, a.State, a.Node, a.Failure)
		}
	}
	if held == 0 || r.Counts()[AgentUpgraded] == 0 || r.Counts()[AgentPlanned] != 0 || !strings.Contains(r.Reason, "of node worker1, not connected to the master (3022)") {
		t.Errorf("run: %v %s (%d of worker1 held)", r.Counts(), r.Reason, held)
	}
}

// The window closes: no new wave starts, the run is paused, resume continues.
func TestUpgradeRunWindow(t *testing.T) {
	e := newUpgradeEnv(t)
	e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome { return upgraded })
	r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Canary: 1}), e.now)
	rn := e.runner()
	rn.Window = time.Second
	if err := rn.Run(context.Background(), r); err != nil || r.State != RunPaused || r.Waves[0].State != WavePassed || r.Waves[1].State != WavePending {
		t.Fatalf("window: %v %s %+v", err, r.State, r.Waves[1])
	}
	rn.Window = 0
	if err := rn.Resume(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := rn.Run(context.Background(), r); err != nil || r.State != RunDone || r.Counts()[AgentUpgraded] != 10 {
		t.Fatalf("resumed: %v %s %v", err, r.State, r.Counts())
	}
}

// TestUpgradeRunSendsWhileAgentsRestart: the limit is on WPK sends under way (the module's threads),
// not on agents restarting. Tasks still In progress hold their threads: nothing more is sent until
// they move on. Agents whose send is over (the task Updating, the agent restarting and disconnected)
// hold none: the next agents are sent while they restart, two at a time.
func TestUpgradeRunSendsWhileAgentsRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome managertest.TaskOutcome
		maxSent int // the most agents sent and not yet judged at once
	}{
		{"sends under way hold the threads", managertest.TaskOutcome{Status: "In progress"}, 2},
		{"restarting agents hold no thread", managertest.TaskOutcome{Status: "Updating", Disconnect: true}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newUpgradeEnv(t)
			e.srv.SetUpgradeOutcome(func(string) managertest.TaskOutcome { return tc.outcome })
			r := NewUpgradeRun(e.plan(t, UpgradeWaveOptions{Canary: 0, Waves: []float64{1}, InFlight: 2}), e.now)
			rn := e.runner()
			polls, maxSent := 0, 0
			rn.Sleep = func(ctx context.Context, d time.Duration) error {
				e.now = e.now.Add(d)
				polls++
				sent := r.Counts()[AgentSent]
				maxSent = max(maxSent, sent)
				if polls%6 == 0 { // now and then every agent sent is back with the target version
					for id, a := range r.Agents {
						if a.State == AgentSent {
							e.srv.FinishTask(id, upgraded)
						}
					}
				}
				return ctx.Err()
			}
			if err := rn.Run(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			if c := r.Counts(); r.State != RunDone || c[AgentUpgraded] != 10 || maxSent != tc.maxSent {
				t.Errorf("%s %v; at most %d agents sent at once, want %d", r.State, c, maxSent, tc.maxSent)
			}
			for _, s := range e.srv.SeenPath("PUT /agents/upgrade") {
				if n := strings.Count(s, "%2C") + 1; n > 2 {
					t.Errorf("a request of %d agents: %s", n, s)
				}
			}
		})
	}
}
