package health

import (
	"strings"
	"testing"
	"time"
)

// distributedHost is a world where this host runs only some components (config components): the
// other components' units are not found, their packages not installed, their ports not listening.
func distributedHost(comps ...string) (*world, func(t *testing.T) *Env) {
	w := healthyWorld()
	here := map[string]bool{}
	for _, c := range comps {
		here[c] = true
	}
	units := map[string]string{"indexer": "siem-indexer.service", "manager": "siem-manager.service", "dashboard": "siem-dashboard.service", "shipper": "shipper.service"}
	pkgs := map[string]string{"indexer": "siem-indexer", "manager": "siem-manager", "dashboard": "siem-dashboard", "shipper": "shipper"}
	ports := map[string][]int{"indexer": {9200}, "manager": {1514, 1515, 55000}, "dashboard": {5601}}
	for comp, u := range units {
		if !here[comp] {
			w.units.states[u] = "not-found"
			delete(w.pkgs, pkgs[comp])
			for _, p := range ports[comp] {
				delete(w.ports, p)
			}
		}
	}
	return w, func(t *testing.T) *Env {
		e := w.env(t)
		e.Stack.Config.Components = comps
		return e
	}
}

// runHost runs every check of env's environment.
func runHost(t *testing.T, env func(t *testing.T) *Env) map[string]Result {
	t.Helper()
	return runChecks(t, env(t), 5*time.Second)
}

// TestHostComponentsOnlyJudgeThisHost: on a host that runs only some components, units, ports
// and versions judge those (naming the others as not on this host), the shipper check leaves the
// report where no shipper runs, and the checks over the network (indexer.*, manager.api,
// dashboard) still run; the same host with the default (all four) is CRIT.
func TestHostComponentsOnlyJudgeThisHost(t *testing.T) {
	for _, tc := range []struct {
		comps       []string
		units       string
		versions    string
		withShipper bool
	}{
		{[]string{"indexer"}, "1/1 units active", "indexer at 4.9.0 on this host", false},
		{[]string{"manager", "shipper"}, "2/2 units active", "manager at 4.9.0 on this host", true},
		{[]string{"dashboard"}, "1/1 units active", "dashboard at 4.9.0 on this host", false},
	} {
		t.Run(strings.Join(tc.comps, "+"), func(t *testing.T) {
			_, env := distributedHost(tc.comps...)
			res := runHost(t, env)
			for id, r := range res {
				if r.Status != OK {
					t.Errorf("%s: %s %s (fix %q) evidence %v", id, r.Status, r.Summary, r.Fix, r.Evidence)
				}
			}
			if got := res["units"].Summary; got != tc.units {
				t.Errorf("units summary %q, want %q", got, tc.units)
			}
			if got := res["versions"].Summary; got != tc.versions {
				t.Errorf("versions summary %q, want %q", got, tc.versions)
			}
			for _, id := range []string{"units", "ports", "versions"} {
				if ev := strings.Join(res[id].Evidence, "\n"); !strings.Contains(ev, "not on this host (components: "+strings.Join(tc.comps, ", ")+")") {
					t.Errorf("%s evidence does not name what is not on this host:\n%s", id, ev)
				}
			}
			if _, ok := res["shipper"]; ok != tc.withShipper {
				t.Errorf("shipper check in the report: %v, want %v", ok, tc.withShipper)
			}
			for _, id := range []string{"indexer.api", "indexer.health", "manager.api", "dashboard", "alerts.flow"} {
				if _, ok := res[id]; !ok {
					t.Errorf("%s left the report; it reaches its component over the network", id)
				}
			}

			// The same host without the key (all four components): what the distributed lab's
			// hosts showed before it.
			_, all := distributedHost(tc.comps...)
			res = runHost(t, func(t *testing.T) *Env { e := all(t); e.Stack.Config.Components = nil; return e })
			for _, id := range []string{"units", "ports", "versions"} {
				if res[id].Status != Crit {
					t.Errorf("all four components expected: %s is %s %s, want CRIT", id, res[id].Status, res[id].Summary)
				}
			}
		})
	}
}

// TestHostComponentsStillCatchTheirFaults: this host's own unit, port and package are judged as on
// a single host.
func TestHostComponentsStillCatchTheirFaults(t *testing.T) {
	w, env := distributedHost("manager", "shipper")
	w.units.states["shipper.service"] = "failed"
	delete(w.ports, 55000)
	w.mgr.version = "4.10.0"
	res := runHost(t, env)
	if r := res["units"]; r.Status != Crit || !strings.Contains(r.Summary, "not active: shipper.service") {
		t.Errorf("units: %s %s", r.Status, r.Summary)
	}
	if r := res["ports"]; r.Status != Crit || !strings.Contains(r.Summary, "55000") || r.Fix != "siemctl services restart manager" {
		t.Errorf("ports: %s %s fix %q", r.Status, r.Summary, r.Fix)
	}
	if r := res["versions"]; r.Status != Crit || !strings.Contains(r.Summary, "manager API reports 4.10.0 but the package is 4.9.0") {
		t.Errorf("versions: %s %s", r.Status, r.Summary)
	}

	w, env = distributedHost("indexer")
	delete(w.pkgs, "siem-indexer")
	if r := runHost(t, env)["versions"]; r.Status != Crit || !strings.Contains(r.Summary, "not installed: siem-indexer") || strings.Contains(r.Summary, "siem-manager") {
		t.Errorf("versions without the indexer package: %s %s", r.Status, r.Summary)
	}
}
