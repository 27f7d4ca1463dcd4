package output

import (
	"math"
	"testing"
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
