// Package packaging ships siemctl's systemd units (the snapshot service and
// its hourly timer) and their installer, embedded for tools and tests.
package packaging

import (
	"bytes"
	"embed"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/config"
)

// Files holds siemctl-snapshot.service, siemctl-snapshot.timer, install.sh and the example
// configuration siemctl.yaml (/etc/siemctl/siemctl.yaml in the packages).
//
//go:embed siemctl-snapshot.service siemctl-snapshot.timer install.sh siemctl.yaml
var Files embed.FS

// Units are the unit file names, service first.
func Units() []string { return []string{"siemctl-snapshot.service", "siemctl-snapshot.timer"} }

// DefaultBin is the siemctl path in the checked-in service (install.sh's default).
const DefaultBin = "/usr/local/bin/siemctl"

// StackUnits lists the indexer and manager units of every profile (config.Profiles), sorted: the
// units a snapshot is ordered after. systemd ignores After= on a unit that does not exist, so one
// service file serves every profile; TestServiceAfterFollowsProfiles keeps the checked-in
// service's After= equal to this list.
func StackUnits() []string {
	seen := map[string]bool{}
	var units []string
	for _, p := range config.ProfileNames() {
		for _, section := range []string{"indexer", "manager"} {
			m, _ := config.Profiles[p][section].(map[string]any)
			if u, _ := m["unit"].(string); u != "" && !seen[u] {
				seen[u] = true
				units = append(units, u)
			}
		}
	}
	sort.Strings(units)
	return units
}

// Service returns siemctl-snapshot.service with its ExecStart binary at bin (an absolute path
// of safe characters, as install.sh requires).
func Service(bin string) ([]byte, error) {
	if !filepath.IsAbs(bin) || strings.ContainsFunc(bin, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/+-", r))
	}) {
		return nil, fmt.Errorf("siemctl path %q: want an absolute path of letters, digits and ._/+-", bin)
	}
	b, err := Files.ReadFile("siemctl-snapshot.service")
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b, []byte(DefaultBin), []byte(bin)), nil
}
