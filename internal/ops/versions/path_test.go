package versions_test

import (
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/packages"
)

type debOrder struct{}

func (debOrder) Compare(a, b string) int { return packages.CompareDeb(a, b) }

func TestCheckUpgradePath(t *testing.T) {
	for _, tt := range []struct {
		installed, target string
		equal             bool
		err               string
	}{
		{"", "4.10.0-1", false, ""},        // an install
		{"4.9.0-1", "4.10.0-1", false, ""}, // minor
		{"4.10.0-1", "4.10.0-1", true, ""}, // the same
		{"4.10.0-1", "4.9.0-1", false, "no downgrades"},
		// 4.x → 5.x: the release table's migration (the plan's NO-GO), not a bare "major jump"
		{"4.14.1-1", "5.0.0-1", false, "4.14.1-1 → 5.0.0-1: a migration, not an upgrade"},
		{"3.13.3-1", "4.14.4-1", false, "major version jump"},
		{"4.9.0-1", "4.x-1", false, "not major.minor.patch"},
	} {
		equal, err := versions.CheckUpgradePath(debOrder{}, tt.installed, tt.target)
		if equal != tt.equal || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q → %q: equal %v, %v; want %v, %q", tt.installed, tt.target, equal, err, tt.equal, tt.err)
		}
	}
}

// The gate says the release table's word on a 5.x target (what the plan says), once.
func TestMigrationNoGo(t *testing.T) {
	if got := versions.MigrationNoGo("5.0.0-1"); !strings.Contains(got, "Wazuh 5.0.0 is a migration, not an upgrade") || !strings.Contains(got, "read "+versions.MigrationDoc) {
		t.Errorf("MigrationNoGo(5.0.0-1) = %q", got)
	}
	if got := versions.MigrationNoGo("4.14.4-1"); got != "" {
		t.Errorf("MigrationNoGo(4.14.4-1) = %q, want none", got)
	}
}
