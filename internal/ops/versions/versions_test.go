package versions_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/versions"
)

var names = map[string]string{"indexer": "siem-indexer", "manager": "siem-manager", "dashboard": "siem-dashboard", "shipper": "shipper"}

func at(indexer, manager, dashboard, shipper string) map[string]string {
	return map[string]string{"indexer": indexer, "manager": manager, "dashboard": dashboard, "shipper": shipper}
}

// TestJudge: one case per answer of the verdict; the health check
// "versions" and gate.versions (check installed) map the same answers.
func TestJudge(t *testing.T) {
	tests := []struct {
		name     string
		f        versions.Facts
		version  string
		problems string // "; "-joined, "" when fine
		fix      string
		evidence string // a line the evidence holds
	}{
		{"identical, services agree", versions.Facts{Installed: at("4.9.0-1", "4.9.0-1", "4.9.0-1", "7.10.2-1"), ManagerAPI: "4.9.0", Dashboard: "4.9.0",
			Indexer: []indexer.NodeVersion{{Name: "node-1", Version: "2.11.1"}}}, "4.9.0", "", "", "indexer runs node-1 OpenSearch 2.11.1"},
		{"package revisions and an epoch aside", versions.Facts{Installed: at("4.9.0-1", "1:4.9.0-2", "4.9.0-1", ""), ManagerAPI: "4.9.0"}, "4.9.0", "", "", "siem-manager: 1:4.9.0-2"},
		{"shipper may differ", versions.Facts{Installed: at("4.9.0-1", "4.9.0-1", "4.9.0-1", "4.8.0-1")}, "4.9.0", "", "", "shipper: 4.8.0-1 (may differ)"},
		{"core versions differ", versions.Facts{Installed: at("4.10.0-1", "4.9.0-1", "4.9.0-1", "")}, "",
			"component versions differ (4.10.0: siem-indexer; 4.9.0: siem-manager,siem-dashboard); indexer, manager and dashboard must be identical", "siemctl upgrade resume", "siem-indexer: 4.10.0-1"},
		{"a core package not installed", versions.Facts{Installed: at("4.9.0-1", "", "4.9.0-1", "")}, "", "not installed: siem-manager", "install the missing package(s)", "siem-manager: not installed"},
		{"manager not restarted after the upgrade", versions.Facts{Installed: at("4.10.0-1", "4.10.0-1", "4.10.0-1", ""), ManagerAPI: "4.9.0", Dashboard: "4.10.0"}, "4.10.0",
			"manager API reports 4.9.0 but the package is 4.10.0 (not restarted after the upgrade?)", "siemctl services restart manager", "manager API reports 4.9.0"},
		{"dashboard not restarted: only the dashboard restarts", versions.Facts{Installed: at("4.10.0-1", "4.10.0-1", "4.10.0-1", ""), ManagerAPI: "4.10.0", Dashboard: "4.9.0"}, "4.10.0",
			`dashboard reports 4.9.0 but the package is 4.10.0: the dashboard will say "API version mismatch"`, "siemctl services restart dashboard", "dashboard reports 4.9.0"},
		{"at the wanted versions", versions.Facts{Installed: at("4.10.0-1", "4.10.0-1", "4.10.0-1", "4.10.0-1"), Want: at("4.10.0-1", "4.10.0-1", "4.10.0-1", "4.10.0-1"), ManagerAPI: "4.10.0"}, "4.10.0", "", "", "siem-indexer: 4.10.0-1"},
		{"not at the wanted versions", versions.Facts{Installed: at("4.9.0-1", "4.9.0-1", "4.9.0-1", "4.9.0-1"), Want: at("4.10.0-1", "4.10.0-1", "4.10.0-1", "")}, "4.9.0",
			"siem-indexer is 4.9.0-1, want 4.10.0-1; siem-manager is 4.9.0-1, want 4.10.0-1; siem-dashboard is 4.9.0-1, want 4.10.0-1", "siemctl upgrade resume", "siem-indexer: 4.9.0-1"},
		{"the shipper not at its wanted version", versions.Facts{Installed: at("4.10.0-1", "4.10.0-1", "4.10.0-1", "4.9.0-1"), Want: at("", "", "", "4.10.0-1")}, "4.10.0",
			"shipper is 4.9.0-1, want 4.10.0-1", "siemctl rollback", "shipper: 4.9.0-1 (may differ)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Packages = names
			v := versions.Judge(tt.f)
			if got := v.Summary; got != tt.problems || v.OK() != (tt.problems == "") {
				t.Errorf("problems %q, want %q", got, tt.problems)
			}
			if v.Version != tt.version || !strings.Contains(v.Fix, tt.fix) || tt.fix == "" && v.Fix != "" {
				t.Errorf("version %q fix %q, want %q and a fix with %q", v.Version, v.Fix, tt.version, tt.fix)
			}
			if ev := strings.Join(v.Evidence, "\n"); !strings.Contains(ev, tt.evidence) {
				t.Errorf("evidence lacks %q:\n%s", tt.evidence, ev)
			}
		})
	}
}

func TestDiffer(t *testing.T) {
	for _, tt := range []struct {
		m    map[string]string
		want []string
	}{
		{at("4.10.0-1", "4.10.0-2", "1:4.10.0-1", "4.9.0-1"), []string{"4.10.0"}},
		{at("4.10.0-1", "4.9.0-1", "", ""), []string{"4.10.0", "4.9.0"}},
		{at("", "", "", "4.9.0-1"), nil},
	} {
		if got := versions.Differ(tt.m); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Differ(%v) = %q, want %q", tt.m, got, tt.want)
		}
	}
}
