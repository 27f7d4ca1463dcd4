package fleet

import (
	"strings"
	"testing"
)

// Every code the API answers an agent upgrade with has its own cause and fix (1817–1836, and the
// checks before the module: 1701, 1703, 1707, 1731).
func TestUpgradeCauses(t *testing.T) {
	codes := []int{1701, 1703, 1707, 1731}
	for c := 1817; c <= 1836; c++ {
		codes = append(codes, c)
	}
	seen := map[string]int{}
	for _, code := range codes {
		c := CauseOf(code, "whatever")
		if c.Code != code || c.Cause == "" || c.Fix == "" || strings.Contains(c.Cause, "whatever") {
			t.Errorf("%d: %+v", code, c)
		}
		if prev, dup := seen[c.Cause]; dup {
			t.Errorf("%d and %d share the cause %q", prev, code, c.Cause)
		}
		seen[c.Cause] = code
	}
	// The fixes a user follows name the command or the setting.
	for code, want := range map[int]string{1707: "siemctl agents upgrade resume", 1823: "siemctl upgrade apply", 1828: "--concurrency",
		1822: "4.14.x", 1819: "wpk_repo", 1703: "siemctl upgrade apply"} {
		if c := CauseOf(code, ""); !strings.Contains(c.Fix, want) {
			t.Errorf("%d: fix %q does not name %q", code, c.Fix, want)
		}
	}
	if c := CauseOf(1899, "Something new"); c.Code != 1899 || !strings.Contains(c.Cause, "Something new") || c.Fix == "" {
		t.Errorf("unknown code: %+v", c)
	}
}

// The task error messages of upgrade_result map to their codes (and so to a cause).
func TestTaskErrorCode(t *testing.T) {
	for msg, want := range map[string]int{
		"Send lock restart error":                                                    1828,
		"Send open file error":                                                       1829,
		"Send write file error":                                                      1830,
		"Send close file error":                                                      1831,
		"Send verify sha1 error":                                                     1832,
		"Send upgrade command error":                                                 1833,
		"Upgrade procedure exited with error code: 2":                                1834,
		"Upgrade procedure failed due to missing dependency":                         1835,
		"The agent could not start":                                                  1836,
		"The WPK file does not exist":                                                1826,
		"The WPK sha1 of the file is not valid":                                      1827,
		"The repository is not reachable":                                            1824,
		"The WPK for this platform is not available":                                 1819,
		"Direct upgrade to v5.0.0 is not supported. Please upgrade to v4.14.x first": 1822,
		"something else":                                                             0,
	} {
		if got := TaskErrorCode(msg); got != want {
			t.Errorf("%q: %d, want %d", msg, got, want)
		}
	}
}
