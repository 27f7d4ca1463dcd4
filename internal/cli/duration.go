package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// maxDuration bounds every duration siemctl reads.
const maxDuration = 100 * 365 * 24 * time.Hour

// ParseDuration reads the one duration syntax of every siemctl flag: Go's (90s, 15m, 1h30m, 1.5h)
// plus days and weeks (90d, 2w, 1d12h). It must be above zero and at most 100 years.
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid duration %q: use numbers with units s, m, h, d or w (e.g. 90d, 12h, 1h30m, 2w)", s)
	t := strings.TrimSpace(s)
	if t == "" || t[0] == '-' || t[0] == '+' {
		return 0, bad
	}
	var total float64
	for t != "" {
		i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 {
			return 0, bad // no number, or a number without a unit
		}
		num, rest := t[:i], t[i:]
		j := strings.IndexFunc(rest, func(r rune) bool { return (r >= '0' && r <= '9') || r == '.' })
		if j < 0 {
			j = len(rest)
		}
		unit := rest[:j]
		t = rest[j:]
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, bad
		}
		var mult time.Duration
		switch unit {
		case "ns":
			mult = time.Nanosecond
		case "us", "µs":
			mult = time.Microsecond
		case "ms":
			mult = time.Millisecond
		case "s":
			mult = time.Second
		case "m":
			mult = time.Minute
		case "h":
			mult = time.Hour
		case "d":
			mult = 24 * time.Hour
		case "w":
			mult = 7 * 24 * time.Hour
		default:
			return 0, bad
		}
		total += f * float64(mult)
		if total > float64(maxDuration) {
			return 0, fmt.Errorf("invalid duration %q: more than 100 years", s)
		}
	}
	if total < 1 {
		return 0, fmt.Errorf("invalid duration %q: must be more than zero", s)
	}
	return time.Duration(total), nil
}

// FormatDuration writes d the way ParseDuration reads it, in whole days or weeks where exact.
func FormatDuration(d time.Duration) string {
	const day, week = 24 * time.Hour, 7 * 24 * time.Hour
	switch {
	case d == 0:
		return "0s"
	case d%week == 0:
		return strconv.FormatInt(int64(d/week), 10) + "w"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// durationValue is a pflag value with siemctl's duration syntax; zero stays allowed as a default.
type durationValue struct{ p *time.Duration }

func (v durationValue) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}

func (v durationValue) String() string {
	if v.p == nil {
		return "0s"
	}
	return FormatDuration(*v.p)
}

func (durationValue) Type() string { return "duration" }

// DurationVar defines a duration flag that takes siemctl's one duration syntax (ParseDuration).
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}
