package versions

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/packages"
)

// The upgrade path of one package: no downgrade, no major version jump
// (gate.versions holds each component's target against it).

// semver is major.minor.patch of an upstream version.
type semver [3]int

func parseSemver(v string) (semver, error) {
	up := packages.Upstream(v)
	parts := strings.Split(up, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return semver{}, fmt.Errorf("version %q is not major.minor.patch", v)
	}
	var s semver
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return semver{}, fmt.Errorf("version %q is not major.minor.patch", v)
		}
		s[i] = n
	}
	return s, nil
}

// ErrMigration is a path the release table calls a migration, not an upgrade (4.x → 5.x): no
// package goes there in place. MigrationNoGo is the table's whole word on it, said once.
var ErrMigration = errors.New("a migration, not an upgrade: nothing is upgraded in place")

// MigrationNoGo is the release table's no-go of the path to target with what to read ("" when the
// path is an upgrade).
func MigrationNoGo(target string) string {
	p := Cross("", target, nil)
	if p.NoGo == "" {
		return ""
	}
	return p.NoGo + "; read " + p.Read
}

// Comparer orders two package versions as the package manager does
// (*packages.Manager).
type Comparer interface {
	Compare(a, b string) int
}

// CheckUpgradePath says whether going from installed to target is allowed:
// newer, same major. An equal version is reported as equal (not an error).
func CheckUpgradePath(pk Comparer, installed, target string) (equal bool, err error) {
	if installed == "" {
		return false, nil // not installed: an install, not an upgrade
	}
	switch c := pk.Compare(target, installed); {
	case c == 0:
		return true, nil
	case c < 0:
		return false, fmt.Errorf("%s is older than the installed %s: no downgrades (use siemctl rollback)", target, installed)
	}
	from, err := parseSemver(installed)
	if err != nil {
		return false, err
	}
	to, err := parseSemver(target)
	if err != nil {
		return false, err
	}
	if from[0] != to[0] {
		if Cross(installed, target, nil).NoGo != "" {
			return false, fmt.Errorf("%s → %s: %w", installed, target, ErrMigration)
		}
		return false, fmt.Errorf("%s → %s is a major version jump: not supported in one step", installed, target)
	}
	return false, nil
}
