//go:build e2e

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2EDistributedHealth judges a fresh distributed lab (wazuh profile) from every host with
// `siemctl health --cluster` and the full `siemctl health` (each host judging its own components),
// then meets each fault a distributed site meets, one after the other in
// the same lab: the check that names the node goes non-OK, the fix health prints is followed as a
// user would (on the host it names), and the cluster checks are OK again.
func TestE2EDistributedHealth(t *testing.T) {
	l := e2e.Up(t, e2e.Options{Topology: lab.TopologyDistributed, PortOffset: 500, Profile: "wazuh"})
	hosts := []string{"indexer-1", "indexer-2", "indexer-3", "manager-1", "manager-2", "dashboard-1"}
	cluster := func(t *testing.T, host string, args ...string) e2e.Result {
		t.Helper()
		return l.OnHost(t, host).Siemctl(append([]string{"health", "--timeout", "30s"}, args...)...)
	}
	// untilSays runs health on host until it exits with code and says want (a node joining, a worker
	// reconnecting or logging why it cannot).
	untilSays := func(t *testing.T, host string, code int, want string, within time.Duration, args ...string) e2e.Result {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			r := cluster(t, host, args...)
			if (r.Code == code && strings.Contains(r.Stdout, want)) || time.Now().After(deadline) {
				return r
			}
			time.Sleep(3 * time.Second)
		}
	}
	until := func(t *testing.T, host string, code int, within time.Duration, args ...string) e2e.Result {
		t.Helper()
		return untilSays(t, host, code, "", within, args...)
	}

	t.Run("fresh lab: both clusters OK from every host", func(t *testing.T) {
		for _, h := range hosts {
			r := cluster(t, h, "--cluster")
			if r.Code != 0 {
				t.Errorf("%s: health --cluster exit %d\n%s%s", h, r.Code, r.Stdout, r.Stderr)
				continue
			}
			for _, want := range []string{"indexer cluster: OK   3 node(s)", "manager cluster: OK   2 node(s) connected",
				"  indexer-1: ", "  indexer-2: ", "  indexer-3: ", "(elected cluster manager)", "  manager-1: master ", "  manager-2: worker "} {
				if !strings.Contains(r.Stdout, want) {
					t.Errorf("%s: health --cluster lacks %q:\n%s", h, want, r.Stdout)
				}
			}
		}
		t.Logf("health --cluster on manager-1:\n%s", cluster(t, "manager-1", "--cluster").Stdout)
	})

	// Each host's siemctl.yaml names the components it runs (components): the full health judges
	// this host's units, ports and packages and the deployment through the cluster checks and the
	// APIs it reaches; services status shows this host's units.
	t.Run("fresh lab: full health OK and services status on every host", func(t *testing.T) {
		runs := map[string]string{"indexer": "indexer", "manager": "manager, shipper", "dashboard": "dashboard"}
		for _, h := range hosts {
			comps := runs[strings.SplitN(h, "-", 2)[0]]
			r := until(t, h, 0, 2*time.Minute, "-o", "json")
			var rep struct {
				Verdict string `json:"verdict"`
				Checks  []struct {
					ID       string   `json:"id"`
					Status   string   `json:"status"`
					Summary  string   `json:"summary"`
					Evidence []string `json:"evidence"`
				} `json:"checks"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Verdict != "OK" {
				t.Errorf("%s: health exit %d verdict %q (%v)\n%s%s", h, r.Code, rep.Verdict, err, r.Stdout, r.Stderr)
				continue
			}
			ids := map[string]bool{}
			for _, c := range rep.Checks {
				ids[c.ID] = true
				if c.ID == "units" || c.ID == "ports" || c.ID == "versions" {
					if ev := strings.Join(c.Evidence, "\n"); !strings.Contains(ev, "not on this host (components: "+comps+")") {
						t.Errorf("%s: %s does not say what is not on this host:\n%s", h, c.ID, ev)
					}
				}
			}
			for _, id := range []string{"units", "ports", "versions", "indexer.api", "indexer.cluster", "manager.api", "manager.cluster", "alerts.flow", "dashboard"} {
				if !ids[id] {
					t.Errorf("%s: health has no %s check", h, id)
				}
			}
			if ids["shipper"] != strings.Contains(comps, "shipper") {
				t.Errorf("%s: shipper check present %v, runs %s", h, ids["shipper"], comps)
			}
			s := l.OnHost(t, h).Siemctl("services", "status")
			if s.Code != 0 || strings.Contains(s.Stdout, "not-found") {
				t.Errorf("%s: services status exit %d\n%s%s", h, s.Code, s.Stdout, s.Stderr)
			}
			for _, c := range strings.Split(comps, ", ") {
				if !strings.Contains(s.Stdout, c+"\t") {
					t.Errorf("%s: services status does not list %s:\n%s", h, c, s.Stdout)
				}
			}
		}
		// A component this host does not run is refused by name (exit 2), naming what runs here.
		if r := l.OnHost(t, "indexer-1").Siemctl("services", "restart", "manager", "--yes"); r.Code != 2 || !strings.Contains(r.Stderr, "manager not on this host: it runs indexer (the components key") {
			t.Errorf("services restart manager on indexer-1: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("health on indexer-2:\n%s", cluster(t, "indexer-2").Stdout)
	})

	t.Run("worker-disconnected", func(t *testing.T) {
		l.MustSiemlab("fault", "worker-disconnected")
		r := cluster(t, "manager-1", "--check", "manager.cluster")
		if r.Code != 2 || !strings.Contains(r.Stdout, "manager-2 not connected to the master (1/2 nodes connected)") {
			t.Errorf("master: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = untilSays(t, "manager-2", 2, "wazuh-clusterd is stopped on this worker", 30*time.Second, "--check", "manager.cluster")
		if r.Code != 2 || !strings.Contains(r.Stdout, "wazuh-clusterd is stopped on this worker") || !strings.Contains(r.Stdout, "siemctl services restart manager") {
			t.Fatalf("worker: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		// The fix it prints, on the worker.
		if r := l.OnHost(t, "manager-2").Siemctl("services", "restart", "manager", "--yes"); r.Code != 0 {
			t.Fatalf("services restart manager: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := until(t, "manager-1", 0, 2*time.Minute, "--check", "manager.cluster"); r.Code != 0 {
			t.Errorf("after the fix: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("heal", "worker-disconnected")
	})

	t.Run("worker-version-mismatch", func(t *testing.T) {
		l.MustSiemlab("fault", "worker-version-mismatch")
		r := untilSays(t, "manager-2", 2, "(3031)", time.Minute, "--check", "manager.cluster")
		if !strings.Contains(r.Stdout, "this worker is refused by its master: versions differ (3031)") {
			t.Errorf("worker: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = cluster(t, "manager-1", "--check", "manager.cluster")
		if r.Code != 2 || !strings.Contains(r.Stdout, "manager-2 not connected to the master") || !strings.Contains(r.Stdout, "3031") {
			t.Errorf("master: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		// Putting the master's version back on the worker is the lab's heal (the worker's VERSION).
		l.MustSiemlab("heal", "worker-version-mismatch")
		if r := until(t, "manager-1", 0, 2*time.Minute, "--cluster"); r.Code != 0 {
			t.Errorf("after heal: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})

	t.Run("indexer-node-down", func(t *testing.T) {
		l.MustSiemlab("fault", "indexer-node-down:indexer-2")
		r := cluster(t, "manager-1", "--check", "indexer.cluster")
		if r.Code != 2 || !strings.Contains(r.Stdout, "node(s) missing: indexer-2 (2/3 in the cluster)") ||
			!strings.Contains(r.Stdout, "on indexer-2: siemctl services start indexer") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := l.OnHost(t, "indexer-2").Siemctl("services", "start", "indexer", "--yes"); r.Code != 0 {
			t.Fatalf("services start indexer: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		// A JVM rejoining on a loaded machine takes minutes.
		if r := until(t, "indexer-1", 0, 10*time.Minute, "--check", "indexer.cluster"); r.Code != 0 {
			t.Errorf("after the fix: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("heal", "indexer-node-down:indexer-2")
	})

	t.Run("replica-unassigned", func(t *testing.T) {
		l.MustSiemlab("fault", "replica-unassigned")
		r := cluster(t, "manager-2", "--check", "indexer.health", "-o", "json") // the evidence names the unassigned replica
		if r.Code != 1 || !strings.Contains(r.Stdout, "replicas unassigned on a multi-node cluster") || !strings.Contains(r.Stdout, "unassigned replica siem-lab-replicas[0]") {
			t.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("heal", "replica-unassigned")
		if r := until(t, "manager-2", 0, 2*time.Minute, "--check", "indexer.health"); r.Code != 0 {
			t.Errorf("after heal: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}
