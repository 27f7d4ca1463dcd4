package lab

import (
	"slices"
	"testing"

	"github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/shipper"
)

// The lab's real releases carry the OpenSearch of the product's release table; its own builds say
// they are not Wazuh's (their OpenSearch is not the release table's for that number).
func TestReleases(t *testing.T) {
	want := map[string]string{"4.9.0": "2.11.1", "4.10.0": "2.19.3", "4.12.0": "2.19.1", "4.14.1": "2.19.3", "4.14.4": "2.19.4"}
	if len(Releases) != len(want) {
		t.Fatalf("%d releases, want %d", len(Releases), len(want))
	}
	for _, r := range Releases {
		if osv, err := OpenSearchVersion(r.Version); err != nil || osv != want[r.Version] {
			t.Errorf("%s: OpenSearch %s %v, want %s", r.Version, osv, err, want[r.Version])
		}
		if m, ok := shipper.ModuleFor(r.Version); !ok || m.Tarball != r.FilebeatModule {
			t.Errorf("%s: Filebeat module %s, siemctl's shipper/module picks %s", r.Version, r.FilebeatModule, m.Tarball)
		}
		real, _ := versions.ReleaseOf(r.Version)
		if r.Wazuh != (real.OpenSearch == r.OpenSearch) {
			t.Errorf("%s: Wazuh %v, but the release table says its OpenSearch is %s (the lab's %s)", r.Version, r.Wazuh, real.OpenSearch, r.OpenSearch)
		}
	}
	if got := SetOf("4.14.1"); !slices.Equal(got, []string{"4.12.0", "4.14.1", "4.14.4"}) {
		t.Errorf("set of 4.14.1: %v", got)
	}
	if got := SetOf("4.9.0"); !slices.Equal(got, []string{"4.9.0", "4.10.0"}) {
		t.Errorf("set of 4.9.0: %v", got)
	}
	if SetOf("4.11.0") != nil {
		t.Error("4.11.0 is not built")
	}
	for installed, other := range map[string]string{"4.9.0-1": "4.10.0-1", "4.10.0-1": "4.9.0-1", "4.12.0-1": "4.14.1-1", "4.14.1-1": "4.14.4-1", "4.14.4-1": "4.14.1-1"} {
		if got, err := otherRelease(installed); err != nil || got != other {
			t.Errorf("otherRelease(%s) = %s %v, want %s", installed, got, err, other)
		}
	}
	if newestOpenSearch("4.9.0") != "2.19.3" || newestOpenSearch("4.12.0") != "2.19.4" {
		t.Errorf("newest: %s %s", newestOpenSearch("4.9.0"), newestOpenSearch("4.12.0"))
	}
}
