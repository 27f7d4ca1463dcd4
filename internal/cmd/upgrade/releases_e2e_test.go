//go:build e2e

package upgrade_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/lab/e2e"
)

// releasesPortOffset: the lab of real Wazuh releases (550, 600 and 650 are this package's other
// single labs).
const releasesPortOffset = 700

// TestE2EPlanRealReleases: a lab of the real Wazuh 4.12.0 (OpenSearch 2.19.1): health shows the
// release table's OpenSearch and the nodes' agree; the plan to 4.14.4 names OpenSearch 2.19.1 →
// 2.19.4 (from _nodes, not GET /'s 7.10.2) and the rollback method; the plan to 5.0.0 is a NO-GO
// naming the migration; the upgrade to 4.14.4 and its rollback keep every alert. In the wazuh
// layout the Filebeat module changes on that path (wazuh-filebeat-0.4 → 0.5): the upgrade's
// shipper/module step installs 0.5 and the rollback's 0.4 again, from the tarballs the lab serves
// as shipper.module_source; the siem layout manages no module (the step says so).
func TestE2EPlanRealReleases(t *testing.T) {
	binaries(t)
	l := e2e.Up(t, e2e.Options{PortOffset: releasesPortOffset, Version: "4.12.0"})
	wantPackages(t, l.Dir, "4.12.0-1")
	healthOK(t, l)

	t.Run("health versions", func(t *testing.T) {
		r := l.Siemctl("health", "--check", "versions", "-o", "json")
		out := r.Stdout
		if r.Code != 0 || !strings.Contains(out, "release table: Wazuh 4.12.0's indexer is OpenSearch 2.19.1") || !strings.Contains(out, "OpenSearch 2.19.1") ||
			strings.Contains(out, "not the 2.19.1") {
			t.Fatalf("health versions: exit %d\n%s\n%s", r.Code, out, r.Stderr)
		}
	})
	t.Run("plan to 4.14.4", func(t *testing.T) {
		r := l.Siemctl("upgrade", "plan", "--to", "4.14.4", "-o", "json")
		var p struct {
			Verdict string        `json:"verdict"`
			Indexer versions.Path `json:"indexer_versions"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
			t.Fatalf("%v\n%s\n%s", err, r.Stdout, r.Stderr)
		}
		ix := p.Indexer
		if p.Verdict != "GO" || ix.FromOpenSearch != "2.19.1" || ix.ToOpenSearch != "2.19.4" || len(ix.Running) != 1 || ix.Running[0].Version != "2.19.1" ||
			ix.Readable || !strings.Contains(ix.Rollback, "the copy or the snapshot") || len(ix.Warnings) != 0 || ix.NoGo != "" {
			t.Fatalf("plan: %s\n%s", r.Stdout, r.Stderr)
		}
		r = l.Siemctl("upgrade", "plan", "--to", "4.14.4")
		if !strings.Contains(r.Stdout, "indexer: Wazuh 4.12.0 = OpenSearch 2.19.1 → Wazuh 4.14.4 = OpenSearch 2.19.4") {
			t.Errorf("plan table:\n%s", r.Stdout)
		}
	})
	t.Run("plan to 5.0.0 is a no-go", func(t *testing.T) {
		r := l.Siemctl("upgrade", "plan", "--to", "5.0.0")
		if r.Code != 3 || !strings.Contains(r.Stdout, "Upgrade plan to 5.0.0: NO-GO") || !strings.Contains(r.Stdout, "no in-place upgrade") ||
			!strings.Contains(r.Stdout, "4.x indexed data does not carry over") || !strings.Contains(r.Stdout, "read before anything else:") {
			t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		wantPackages(t, l.Dir, "4.12.0-1") // nothing touched
	})
	c := newLabClient(t, l.Dir)
	before := c.alertCounts(t)
	t.Run("upgrade to 4.14.4", func(t *testing.T) {
		r := l.Siemctl("upgrade", "apply", "--to", "4.14.4", "--yes")
		mustCode(t, r, 0, "upgrade apply")
		wantModule(t, l, r, "wazuh-filebeat-0.5")
		wantPackages(t, l.Dir, "4.14.4-1")
		if v := c.openSearchVersion(t); v != "2.19.4" {
			t.Errorf("OpenSearch %s after the upgrade, want 2.19.4", v)
		}
		healthOK(t, l)
		noLoss(t, before, c.alertCounts(t))
	})
	t.Run("rollback to 4.12.0", func(t *testing.T) {
		r := l.Siemctl("rollback", "--yes")
		mustCode(t, r, 0, "rollback")
		wantModule(t, l, r, "wazuh-filebeat-0.4")
		wantPackages(t, l.Dir, "4.12.0-1")
		if v := c.openSearchVersion(t); v != "2.19.1" {
			t.Errorf("OpenSearch %s after the rollback, want 2.19.1", v)
		}
		healthOK(t, l)
		noLoss(t, before, c.alertCounts(t))
	})
}

// wantModule: the run r installed the Filebeat module tarball name where the lab's layout has its
// module managed (wazuh), and said the module is not managed otherwise (siem).
func wantModule(t *testing.T, l *e2e.Lab, r e2e.Result, name string) {
	t.Helper()
	want := "shipper.module_source is not set"
	if l.Profile.Shipper.ModuleTarballs {
		want = "Filebeat module " + name + " installed"
	}
	if !strings.Contains(r.Stdout+r.Stderr, want) {
		t.Errorf("the run does not say %q:\n%s", want, lines(r.Stdout+r.Stderr, "shipper/module"))
	}
}
