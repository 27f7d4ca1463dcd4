package output

import "fmt"

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
