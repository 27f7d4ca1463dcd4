//go:build e2e

package health_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab/e2e"
)

func health(t *testing.T, l *e2e.Lab, args ...string) (report, e2e.Result) {
	t.Helper()
	r := l.Siemctl(append([]string{"health", "-o", "json"}, args...)...)
	var rep report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("health output is not JSON (exit %d): %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return rep, r
}

func byID(rep report) map[string]struct{ Status, Summary, Fix string } {
	m := map[string]struct{ Status, Summary, Fix string }{}
	for _, c := range rep.Checks {
		m[c.ID] = struct{ Status, Summary, Fix string }{c.Status, c.Summary + " | " + strings.Join(c.Evidence, " | "), c.Fix}
	}
	return m
}

func notOK(rep report) string {
	var b strings.Builder
	for _, c := range rep.Checks {
		if c.Status != "OK" {
			fmt.Fprintf(&b, "\n  %s %s: %s (fix: %s) %v", c.Status, c.ID, c.Summary, c.Fix, c.Evidence)
		}
	}
	return b.String()
}

// TestE2EHealthLab: a fresh lab is healthy (also --deep); every fault turns
// the matching check WARN or CRIT with the right fix, and heal turns it OK.
func TestE2EHealthLab(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 100})
	p := l.Profile

	// siemlab up returns when the stack is healthy end to end (the first
	// alert searchable): no waiting here.
	if rep, r := health(t, l); r.Code != 0 || rep.Verdict != "OK" {
		t.Fatalf("health right after siemlab up: exit %d verdict %s:%s", r.Code, rep.Verdict, notOK(rep))
	}
	rep, r := health(t, l, "--deep", "--timeout", "90s")
	if r.Code != 0 {
		t.Fatalf("health --deep exit %d:%s", r.Code, notOK(rep))
	}
	checks := byID(rep)
	if !strings.Contains(checks["alerts.probe"].Summary, "searchable after") {
		t.Errorf("probe: %+v", checks["alerts.probe"])
	}
	if !strings.Contains(checks["shipper"].Summary, "test output OK") {
		t.Errorf("shipper --deep: %+v", checks["shipper"])
	}
	t.Logf("healthy lab: health took %s", r.Took)

	// siemctl version reports the packages and what the services say.
	vr := l.Siemctl("version", "-o", "json")
	var ver struct {
		Stack map[string]struct{ Package, API string } `json:"stack"`
	}
	if err := json.Unmarshal([]byte(vr.Stdout), &ver); err != nil || vr.Code != 0 {
		t.Fatalf("version: exit %d %v\n%s", vr.Code, err, vr.Stdout)
	}
	if v := ver.Stack["manager"]; v.Package != "4.9.0-1" || v.API != "4.9.0" {
		t.Errorf("manager version %+v", v)
	}
	if v := ver.Stack["indexer"]; v.Package != "4.9.0-1" || v.API != "OpenSearch 2.11.1" {
		t.Errorf("indexer version %+v", v)
	}

	faults := []struct {
		fault  string
		args   []string
		check  string
		status string
		text   string
		fix    string
		// notFix must not be in the fix (advice the evidence contradicts).
		notFix string
		// also: other checks the fault turns, with their fix.
		also []struct{ check, status, fix string }
	}{
		{"allocation-primaries", nil, "indexer.allocation", "WARN", "primaries", "siemctl indexer allocation all", "", nil},
		{"watermark-override", nil, "indexer.allocation", "WARN", "watermark", "siemctl indexer watermark --clear", "", nil},
		// The fix comes from the allocation explanation: the filter names a node that does not exist.
		{"cluster-red", nil, "indexer.health", "CRIT", "red", `/siem-lab-red/_settings -H 'Content-Type: application/json' -d '{"index.routing.allocation.require._name":null}'`, "number_of_replicas",
			[]struct{ check, status, fix string }{{"indexer.shards", "WARN", `index.routing.allocation.require._name="siem-lab-missing-node" on index siem-lab-red matches none of the nodes`}}},
		{"agents-disconnected", nil, "agents", "WARN", "disconnected", "siemctl agents list --status disconnected", "", nil},
		{"agent-newer", nil, "agents", "WARN", "newer than the manager", "agents outdated", "", nil},
		{"default-password", nil, "secrets", "WARN", "default", "change the default password", "", nil},
		{"api-ratelimit", []string{"--timeout", "5s"}, "manager.api", "CRIT", "rate limited", "300 requests/min", "", nil},
		// The unit is active: the API is slow, starting it is not the fix.
		{"api-slow", []string{"--timeout", "2s"}, "manager.api", "CRIT", "", "retry with a longer --timeout", "services start", nil},
		{"unit-stopped:" + p.DashboardUnit(), nil, "units", "CRIT", p.DashboardUnit(), "siemctl services start dashboard", "", nil},
		{"process-killed", nil, "units", "CRIT", p.ManagerUnit(), "siemctl services restart manager", "", nil},
		{"manager-config-broken", nil, "manager.config", "CRIT", "", "ossec.conf", "", nil},
		// A failed basic daemon is named at once, with the real fix (its log, the config check of
		// analysisd, a restart), not "wait and retry".
		{"analysisd-failed", nil, "manager.api", "CRIT", "wazuh-analysisd (failed)", "/" + p.InstallDir + "/bin/wazuh-analysisd -t", "wait a minute", nil},
		{"shipper-stalled", []string{"--deep", "--check", "alerts.probe", "--timeout", "90s"}, "alerts.probe", "CRIT", "shipper", "restart shipper", "", nil},
		{"shipper-output-unreachable", []string{"--deep", "--check", "shipper"}, "shipper", "CRIT", "dial up... ERROR", "shipper's output section", "", nil},
	}
	for _, f := range faults {
		t.Run(f.fault, func(t *testing.T) {
			l := l.For(t)
			l.MustSiemlab("fault", f.fault)
			rep, r := health(t, l, f.args...)
			got := byID(rep)[f.check]
			if got.Status != f.status {
				t.Errorf("%s after %s: %s (%s), want %s", f.check, f.fault, got.Status, got.Summary, f.status)
			}
			if !strings.Contains(got.Summary, f.text) || !strings.Contains(got.Fix, f.fix) {
				t.Errorf("%s: summary %q fix %q, want %q / %q", f.check, got.Summary, got.Fix, f.text, f.fix)
			}
			if f.notFix != "" && strings.Contains(got.Fix, f.notFix) {
				t.Errorf("%s: fix %q says %q, which the evidence contradicts", f.check, got.Fix, f.notFix)
			}
			for _, a := range f.also {
				if g := byID(rep)[a.check]; g.Status != a.status || !strings.Contains(g.Fix, a.fix) || (f.notFix != "" && strings.Contains(g.Fix, f.notFix)) {
					t.Errorf("%s after %s: %s, fix %q; want %s, fix with %q", a.check, f.fault, g.Status, g.Fix, a.status, a.fix)
				}
			}
			wantCode := map[string]int{"WARN": 1, "CRIT": 2}[f.status]
			if r.Code < wantCode {
				t.Errorf("exit %d, want >= %d", r.Code, wantCode)
			}
			l.MustSiemlab("heal", f.fault)
			e2e.Eventually(t, 90*time.Second, 2*time.Second, func() error {
				rep, _ := health(t, l, f.args...)
				if st := byID(rep)[f.check]; st.Status != "OK" {
					return fmt.Errorf("%s still %s after heal: %s", f.check, st.Status, st.Summary)
				}
				return nil
			})
		})
	}
	// After every heal the whole stack is healthy again.
	e2e.Eventually(t, 2*time.Minute, 3*time.Second, func() error {
		rep, r := health(t, l)
		if r.Code != 0 {
			return fmt.Errorf("exit %d:%s", r.Code, notOK(rep))
		}
		return nil
	})
}
