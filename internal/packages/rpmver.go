package packages

import (
	"strconv"
	"strings"
)

// CompareRPM compares RPM versions "[epoch:]version[-release]" the way rpm
// does (rpmvercmp on each part; a missing epoch is 0; a release is compared
// only when both sides have one). No Go library for this is in go.mod, so
// this is a port of rpm's rpmvercmp (lib/rpmvercmp.c), including ~ and ^.
func CompareRPM(a, b string) int {
	ea, va, ra := splitEVR(a)
	eb, vb, rb := splitEVR(b)
	if ea != eb {
		if ea < eb {
			return -1
		}
		return 1
	}
	if c := rpmvercmp(va, vb); c != 0 {
		return c
	}
	if ra == "" || rb == "" {
		return 0
	}
	return rpmvercmp(ra, rb)
}

func splitEVR(s string) (epoch int, version, release string) {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		if n, err := strconv.Atoi(s[:i]); err == nil {
			epoch = n
			s = s[i+1:]
		}
	}
	if i := strings.LastIndexByte(s, '-'); i >= 0 {
		return epoch, s[:i], s[i+1:]
	}
	return epoch, s, ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

// rpmvercmp compares two version (or release) strings segment by segment.
func rpmvercmp(a, b string) int {
	if a == b {
		return 0
	}
	for len(a) > 0 || len(b) > 0 {
		for len(a) > 0 && !isAlnum(a[0]) && a[0] != '~' && a[0] != '^' {
			a = a[1:]
		}
		for len(b) > 0 && !isAlnum(b[0]) && b[0] != '~' && b[0] != '^' {
			b = b[1:]
		}
		// Tilde sorts before everything, even the end of the string.
		if (len(a) > 0 && a[0] == '~') || (len(b) > 0 && b[0] == '~') {
			if len(a) == 0 || a[0] != '~' {
				return 1
			}
			if len(b) == 0 || b[0] != '~' {
				return -1
			}
			a, b = a[1:], b[1:]
			continue
		}
		// Caret sorts after the end of the string but before anything else.
		if (len(a) > 0 && a[0] == '^') || (len(b) > 0 && b[0] == '^') {
			if len(a) == 0 {
				return -1
			}
			if len(b) == 0 {
				return 1
			}
			if a[0] != '^' {
				return 1
			}
			if b[0] != '^' {
				return -1
			}
			a, b = a[1:], b[1:]
			continue
		}
		if len(a) == 0 || len(b) == 0 {
			break
		}
		isNum := isDigit(a[0])
		class := isAlpha
		if isNum {
			class = isDigit
		}
		i := 0
		for i < len(a) && class(a[i]) {
			i++
		}
		j := 0
		for j < len(b) && class(b[j]) {
			j++
		}
		sa, sb := a[:i], b[:j]
		a, b = a[i:], b[j:]
		if len(sb) == 0 {
			// Segments of different kinds: a number is newer than letters.
			if isNum {
				return 1
			}
			return -1
		}
		if isNum {
			sa = strings.TrimLeft(sa, "0")
			sb = strings.TrimLeft(sb, "0")
			if len(sa) != len(sb) {
				if len(sa) > len(sb) {
					return 1
				}
				return -1
			}
		}
		if c := strings.Compare(sa, sb); c != 0 {
			return c
		}
	}
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	if len(a) == 0 {
		return -1
	}
	return 1
}
