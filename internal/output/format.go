package output

import (
	"fmt"
	"time"
)

// Bytes renders a byte count with binary units and one decimal: "512 B",
// "1.5 KiB", "3.0 GiB". The one byte formatter of every table, message and
// report.
func Bytes(n int64) string {
	const unit = 1024
	sign, u := "", uint64(n)
	if n < 0 {
		sign, u = "-", uint64(-(n+1))+1 // -MinInt64 does not fit an int64
	}
	if u < unit {
		return fmt.Sprintf("%s%d B", sign, u)
	}
	div, exp := uint64(unit), 0
	for m := u / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%s%.1f %ciB", sign, float64(u)/float64(div), "KMGTPE"[exp])
}

// Dash renders an empty table cell or value as "-".
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Duration renders a duration for people, to the second under an hour and
// to the minute above: "45s", "4m", "4m30s", "1h12m", "3d" (from 48h).
// Negative durations render as "0s".
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		d = d.Round(time.Second)
		m, s := d/time.Minute, (d%time.Minute)/time.Second
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%02ds", m, s)
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", d/time.Hour, (d%time.Hour)/time.Minute)
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// Ago renders how long before now t was: "45s ago", "1h12m ago"; "-" for
// the zero time.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return Duration(now.Sub(t)) + " ago"
}
