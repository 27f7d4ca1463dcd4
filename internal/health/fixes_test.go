package health

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/process"
)

// runChecks runs the named checks of w's environment under deadline.
func runChecks(t *testing.T, e *Env, deadline time.Duration, ids ...string) map[string]Result {
	t.Helper()
	checks, err := Select(Catalogue(), Selection{Only: ids})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	out := map[string]Result{}
	for _, r := range Run(ctx, e, checks).Results {
		out[r.ID] = r
	}
	return out
}

// A red cluster whose primary is kept off the only node by an allocation
// filter naming a node that does not exist (the lab's cluster-red fault;
// OpenSearch 2.11.1's bodies): the fix is the call that removes the filter,
// not the single-node replica advice.
func TestRedClusterFixComesFromTheAllocationExplanation(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.RedByFilter())
	e := healthyWorld().env(t)
	e.Stack.Indexer = clientset.Of[IndexerAPI](srv.Client(t))
	e.Stack.Config.Indexer.URL, e.Stack.Config.Indexer.CAFile = srv.URL, ""

	res := runChecks(t, e, 5*time.Second, "indexer.health", "indexer.shards")
	want := `the allocation filter index.routing.allocation.require._name="siem-lab-missing-node" on index siem-lab-red matches none of the nodes (node-1): remove it: ` +
		`curl -u admin -X PUT ` + srv.URL + `/siem-lab-red/_settings -H 'Content-Type: application/json' -d '{"index.routing.allocation.require._name":null}'`
	for id, st := range map[string]Status{"indexer.health": Crit, "indexer.shards": Warn} {
		r := res[id]
		if r.Status != st || !strings.HasPrefix(r.Fix, want) {
			t.Errorf("%s: %s %s\nfix  %s\nwant %s…", id, r.Status, r.Summary, r.Fix, want)
		}
		if strings.Contains(r.Fix, "number_of_replicas") {
			t.Errorf("%s: replica advice for a primary kept off by a filter: %s", id, r.Fix)
		}
		if ev := strings.Join(r.Evidence, "\n"); !strings.Contains(ev, `decider filter on node-1: node does not match index setting [index.routing.allocation.require] filters [_name:"siem-lab-missing-node"]`) {
			t.Errorf("%s evidence lacks the decider:\n%s", id, ev)
		}
	}
	// One explanation per run, shared by both checks.
	n := 0
	for _, rq := range srv.Requests() {
		if rq.Path == "/_cluster/allocation/explain" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d explain calls, want 1", n)
	}
}

// The manager API does not answer before the deadline (the lab's api-slow
// fault): the fix follows the unit's state instead of always starting it.
func TestManagerAPITimeoutFixFollowsTheUnit(t *testing.T) {
	tests := []struct {
		name    string
		unit    string // "" unknown (no systemd)
		want    []string
		notWant string
	}{
		{"unit active", "active", []string{"the unit is active but its API is slow", "/var/siem/logs/api.log", "retry with a longer --timeout"}, "services start"},
		{"unit stopped", "inactive", []string{"siemctl services start manager"}, "api.log"},
		{"unit failed", "failed", []string{"siemctl services restart manager"}, "api.log"},
		{"unit not found", "not-found", []string{"install the manager package"}, "services start"},
		{"unit unknown", "", []string{"siemctl services status manager: if siem-manager.service is active the API is slow", "--timeout", "else siemctl services start manager"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := managertest.New(t, managertest.Config{Username: "siem", Password: "Secr3t.Pass"})
			srv.Handle("GET /", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }) // slower than any deadline
			mc, err := manager.New(manager.Options{URL: srv.URL, Username: "siem", Password: "Secr3t.Pass", Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			w := healthyWorld()
			e := w.env(t)
			e.Stack.Manager = clientset.Of[ManagerAPI](mc)
			if tt.unit == "" {
				e.Stack.Units = nil
			} else {
				w.units.states["siem-manager.service"] = tt.unit
			}
			r := runChecks(t, e, 700*time.Millisecond, "manager.api")["manager.api"]
			if r.Status != Crit {
				t.Fatalf("manager.api %s: %s", r.Status, r.Summary)
			}
			for _, s := range tt.want {
				if !strings.Contains(r.Fix, s) {
					t.Errorf("fix %q lacks %q", r.Fix, s)
				}
			}
			if tt.notWant != "" && strings.Contains(r.Fix, tt.notWant) {
				t.Errorf("fix %q contains %q", r.Fix, tt.notWant)
			}
			if tt.unit != "" && !strings.Contains(strings.Join(r.Evidence, "\n"), "unit siem-manager.service: "+strings.Replace(tt.unit, "not-found", "inactive", 1)) {
				t.Errorf("evidence lacks the unit state: %v", r.Evidence)
			}
		})
	}
}

// A basic daemon that failed (wazuh-analysisd crashed on a bad rule): the real API refuses
// every request, the login included, with 1017. The check does not wait it out: it names the
// daemon from the answer and the control tool's status (the API's /manager/status cannot be
// read without a token) and gives the real fix. Only a restarting daemon means "wait".
func TestManagerAPIDaemonDownIsNotAWait(t *testing.T) {
	tests := []struct {
		name, state string
		status      Status
		want        []string
		notWant     string
		wantSleeps  bool
	}{
		{"analysisd failed", "failed", Crit, []string{"wazuh-analysisd (failed)", "/var/siem/logs/ossec.log", "/var/siem/bin/wazuh-analysisd -t", "siemctl rules check", "/var/siem/bin/siem-control restart"}, "wait", false},
		{"remoted stopped", "stopped", Crit, []string{"wazuh-remoted (stopped)", "/var/siem/logs/ossec.log", "siemctl services restart manager"}, "analysisd -t", false},
		{"modulesd restarting", "restarting", Crit, []string{"wait a minute after a restart"}, "ossec.log", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			daemon := "wazuh-analysisd"
			switch tt.state {
			case "stopped":
				daemon = "wazuh-remoted"
			case "restarting":
				daemon = "wazuh-modulesd"
			}
			srv := managertest.New(t, managertest.Config{Username: "siem", Password: "Secr3t.Pass"})
			srv.SetDaemon(daemon, tt.state)
			var sleeps atomic.Int32
			mc, err := manager.New(manager.Options{URL: srv.URL, Username: "siem", Password: "Secr3t.Pass",
				NotReadyWait: 4 * time.Second, NotReadyPoll: time.Second,
				Sleep: func(ctx context.Context, d time.Duration) error { sleeps.Add(1); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			var toolRuns atomic.Int32
			control := process.RunnerFunc(func(ctx context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
				toolRuns.Add(1)
				if name != "/var/siem/bin/siem-control" || strings.Join(args, " ") != "status" {
					return nil, nil, 1, fmt.Errorf("unexpected %s %v", name, args)
				}
				var b strings.Builder
				for _, d := range []string{"wazuh-clusterd", "wazuh-modulesd", "wazuh-monitord", "wazuh-logcollector", "wazuh-remoted",
					"wazuh-syscheckd", "wazuh-analysisd", "wazuh-maild", "wazuh-execd", "wazuh-db", "wazuh-authd", "wazuh-apid"} {
					if d == daemon || d == "wazuh-clusterd" || d == "wazuh-maild" {
						b.WriteString(d + " not running...\n")
					} else {
						b.WriteString(d + " is running...\n")
					}
				}
				return []byte(b.String()), nil, 1, nil
			})
			e := healthyWorld().env(t)
			e.Stack.Manager = clientset.Of[ManagerAPI](mc)
			e.Stack.Tools = manager.Tools{InstallDir: "/var/siem", ControlName: "siem-control", Runner: control}
			r := runChecks(t, e, 10*time.Second, "manager.api")["manager.api"]
			if r.Status != tt.status || !strings.Contains(r.Summary, daemon) {
				t.Fatalf("manager.api %s: %s", r.Status, r.Summary)
			}
			for _, s := range tt.want {
				if !strings.Contains(r.Summary+"\n"+r.Fix, s) {
					t.Errorf("summary %q / fix %q lack %q", r.Summary, r.Fix, s)
				}
			}
			if strings.Contains(r.Fix, tt.notWant) {
				t.Errorf("fix %q contains %q", r.Fix, tt.notWant)
			}
			if got := sleeps.Load(); (got > 0) != tt.wantSleeps {
				t.Errorf("%d not-ready waits (want waits: %v)", got, tt.wantSleeps)
			}
			if !tt.wantSleeps {
				// GET / (its login) and the shared /manager/status login: one refused request each,
				// no retries; then the control tool once.
				if n := srv.Requests.Load(); n > 2 {
					t.Errorf("%d API requests for a down daemon, want at most 2 (no retries)", n)
				}
				if toolRuns.Load() != 1 {
					t.Errorf("control tool ran %d times, want 1", toolRuns.Load())
				}
				if !strings.Contains(strings.Join(r.Evidence, "\n"), "siem-control status") {
					t.Errorf("evidence does not say where the states come from: %v", r.Evidence)
				}
			}
		})
	}
}
