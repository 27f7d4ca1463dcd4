package output

import (
	"math"
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 30: "5.0 GiB", 3 << 40: "3.0 TiB", math.MaxInt64: "8.0 EiB", -2048: "-2.0 KiB", math.MinInt64: "-8.0 EiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDurationAndAgo(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 0: "0s", 1499 * time.Millisecond: "1s", 45 * time.Second: "45s",
		4 * time.Minute: "4m", 4*time.Minute + 5*time.Second: "4m05s", time.Hour + 12*time.Minute + 29*time.Second: "1h12m",
		47*time.Hour + 59*time.Minute: "47h59m", 50 * time.Hour: "2d",
		90 * time.Second: "1m30s", 96*time.Minute + 20*time.Second: "1h36m",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if got := Ago(now.Add(-3*time.Minute), now); got != "3m ago" {
		t.Errorf("Ago = %q", got)
	}
	if got := Ago(time.Time{}, now); got != "-" {
		t.Errorf("Ago(zero) = %q", got)
	}
}
