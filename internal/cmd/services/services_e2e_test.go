//go:build e2e

package services_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2EServices drives the lab's private systemd: status, stop/start in
// order with processes verified gone, restart, confirmation, a broken
// manager explained with its log lines, enable.
func TestE2EServices(t *testing.T) {
	l := e2e.Up(t, e2e.Options{PortOffset: 260})

	status := func() (map[string]string, int) {
		r := l.Siemctl("services", "status", "-o", "json")
		var v []struct {
			Component   string `json:"component"`
			ActiveState string `json:"active_state"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
			t.Fatalf("status JSON: %v\n%s%s", err, r.Stdout, r.Stderr)
		}
		m := map[string]string{}
		for _, s := range v {
			m[s.Component] = s.ActiveState
		}
		return m, r.Code
	}
	if m, code := status(); code != 0 || len(m) != 4 {
		t.Fatalf("fresh lab: exit %d %v", code, m)
	}
	if r := l.Siemctl("services", "status"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "component\tunit\tstate\tsince\tpid\trestarts\n") {
		t.Errorf("table: exit %d\n%s", r.Code, r.Stdout)
	}
	t.Run("bad input", func(t *testing.T) {
		if r := l.Siemctl("services", "stop", "kibana"); r.Code != 2 || !strings.Contains(r.Stderr, `unknown component "kibana"`) {
			t.Errorf("exit %d %s", r.Code, r.Stderr)
		}
		if r := l.Siemctl("services", "stop"); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
			t.Errorf("stop all without --yes: exit %d %s", r.Code, r.Stderr)
		}
		if r := l.Siemctl("services", "stop", "shipper"); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
			t.Errorf("stop one unit without --yes: exit %d %s", r.Code, r.Stderr)
		}
		r := l.Siemctl("services", "stop", "shipper", "--dry-run")
		if r.Code != 0 || r.Stdout != "systemd StopUnit "+l.Profile.Shipper.Unit()+" (replace), wait up to 30s for inactive and its processes gone\n" {
			t.Errorf("dry run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if m, _ := status(); m["indexer"] != "active" || m["shipper"] != "active" {
			t.Errorf("something was stopped: %v", m)
		}
	})
	t.Run("host lock held by a concurrent upgrade", func(t *testing.T) {
		// Another process holds the host lock, as upgrade apply does for
		// its whole run: every changing verb exits 6 naming it, and no
		// unit is touched.
		held := clitest.HoldLock(t, l.StateDir())
		for _, args := range [][]string{{"stop", "shipper", "--yes"}, {"restart", "all", "--yes"}, {"start", "--yes"}, {"enable", "--yes"}} {
			r := l.Siemctl(append([]string{"services"}, args...)...)
			if r.Code != 6 || !strings.Contains(r.Stderr, clitest.HolderCommand) || !strings.Contains(r.Stderr, "run "+clitest.HolderRunID) {
				t.Errorf("%v: exit %d %s", args, r.Code, r.Stderr)
			}
		}
		if err := held.Release(); err != nil {
			t.Fatal(err)
		}
		if m, code := status(); code != 0 || m["shipper"] != "active" {
			t.Errorf("a unit changed while the lock was held: exit %d %v", code, m)
		}
	})
	t.Run("stop and start", func(t *testing.T) {
		r := l.Siemctl("services", "stop", "manager", "shipper", "--yes")
		if r.Code != 0 || strings.Index(r.Stdout, "shipper") > strings.Index(r.Stdout, "manager\t") {
			t.Fatalf("stop: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if m, code := status(); code != 3 || m["manager"] != "inactive" || m["shipper"] != "inactive" {
			t.Errorf("after stop: exit %d %v", code, m)
		}
		r = l.Siemctl("services", "start", "-o", "json", "--yes")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"ok": true`) {
			t.Fatalf("start: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if m, code := status(); code != 0 {
			t.Errorf("after start: exit %d %v", code, m)
		}
	})
	t.Run("restart", func(t *testing.T) {
		r := l.Siemctl("services", "restart", "dashboard", "--yes")
		if r.Code != 0 || !strings.Contains(r.Stdout, "dashboard\t"+l.Profile.DashboardUnit()+"\trestart\tOK\tactive/running") {
			t.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
	t.Run("broken manager explained", func(t *testing.T) {
		l.MustSiemlab("fault", "manager-config-broken")
		r := l.Siemctl("services", "restart", "manager", "shipper", "--yes")
		if r.Code != 1 || !strings.Contains(r.Stdout, "manager\t"+l.Profile.ManagerUnit()+"\trestart\tFAILED") ||
			!strings.Contains(r.Stdout, "shipper\t"+l.Profile.Shipper.Unit()+"\trestart\tSKIPPED") ||
			// the diagnosis: the cause from the manager's own check, and the fix naming the file
			!strings.Contains(r.Stderr, "cause: configuration invalid") || !strings.Contains(r.Stderr, "ossec.conf at the reported element and line") {
			t.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		l.MustSiemlab("heal", "manager-config-broken")
		if r := l.Siemctl("services", "start", "manager", "--yes"); r.Code != 0 {
			t.Errorf("start after heal: exit %d %s", r.Code, r.Stderr)
		}
	})
	t.Run("restart all", func(t *testing.T) {
		r := l.Siemctl("services", "restart", "all", "--yes")
		if r.Code != 0 {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		order := []string{"indexer\t", "manager\t", "dashboard\t", "shipper\t"}
		last := -1
		for _, c := range order {
			i := strings.Index(r.Stdout, c)
			if i < last {
				t.Errorf("not in start order:\n%s", r.Stdout)
			}
			last = i
		}
	})
	t.Run("enable", func(t *testing.T) {
		if r := l.Siemctl("services", "enable", "-o", "json", "--yes"); r.Code != 0 || !strings.Contains(r.Stdout, `"units"`) {
			t.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}
