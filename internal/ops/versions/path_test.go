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
		{"4.14.1-1", "5.0.0-1", false, "major version jump"},
		{"4.9.0-1", "4.x-1", false, "not major.minor.patch"},
	} {
		equal, err := versions.CheckUpgradePath(debOrder{}, tt.installed, tt.target)
		if equal != tt.equal || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q → %q: equal %v, %v; want %v, %q", tt.installed, tt.target, equal, err, tt.equal, tt.err)
		}
	}
}
