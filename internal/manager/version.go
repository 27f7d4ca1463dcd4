package manager

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a manager/agent version major.minor.patch, comparable.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion reads "Wazuh v4.9.0", "v4.9.0" or "4.9.0" (surrounding space
// and the product prefix are ignored, case-insensitively). Anything else,
// including a missing patch level or a suffix, is an error.
func ParseVersion(s string) (Version, error) {
	t := strings.TrimSpace(s)
	if i := strings.LastIndexByte(t, ' '); i >= 0 {
		// "Wazuh v4.9.0", "SIEM v4.9.0": one product word, then the version.
		prefix := strings.TrimSpace(t[:i])
		if prefix == "" || strings.ContainsAny(prefix, " \t") {
			return Version{}, fmt.Errorf("version %q: want like 4.9.0, v4.9.0 or \"Wazuh v4.9.0\"", s)
		}
		t = t[i+1:]
	}
	if len(t) > 0 && (t[0] == 'v' || t[0] == 'V') {
		t = t[1:]
	}
	parts := strings.Split(t, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("version %q: want like 4.9.0, v4.9.0 or \"Wazuh v4.9.0\"", s)
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || len(p) > 6 || strings.TrimLeft(p, "0123456789") != "" {
			return Version{}, fmt.Errorf("version %q: %q is not a number", s, p)
		}
		v, err := strconv.Atoi(p)
		if err != nil {
			return Version{}, fmt.Errorf("version %q: %w", s, err)
		}
		n[i] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

// String renders "4.9.0" (no "v").
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare returns -1, 0 or +1.
func (v Version) Compare(o Version) int {
	for _, d := range [3]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// Less reports v < o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

// IsZero reports an unset version.
func (v Version) IsZero() bool { return v == Version{} }
