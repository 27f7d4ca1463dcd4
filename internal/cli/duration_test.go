package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"90d", 90 * 24 * time.Hour, ""}, {"2w", 14 * 24 * time.Hour, ""}, {"1d12h", 36 * time.Hour, ""},
		{"15m", 15 * time.Minute, ""}, {"1h30m", 90 * time.Minute, ""}, {"1.5h", 90 * time.Minute, ""},
		{"500ms", 500 * time.Millisecond, ""}, {" 30s ", 30 * time.Second, ""},
		{"15", 0, "invalid duration"}, {"", 0, "invalid duration"}, {"-5m", 0, "invalid duration"},
		{"5x", 0, "invalid duration"}, {"d", 0, "invalid duration"}, {"1..5h", 0, "invalid duration"},
		{"0d", 0, "more than zero"}, {"0s", 0, "more than zero"}, {"200y", 0, "invalid duration"},
		{"99999w", 0, "more than 100 years"},
	} {
		got, err := ParseDuration(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0s", 10 * time.Second: "10s", 48 * time.Hour: "2d", 14 * 24 * time.Hour: "2w", 90 * time.Minute: "1h30m0s"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %s, want %s", d, got, want)
		}
		if d > 0 {
			if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
				t.Errorf("round trip of %v: %v %v", d, back, err)
			}
		}
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var d time.Duration
	DurationVar(fs, &d, "retry-lock", 0, "")
	if err := fs.Parse([]string{"--retry-lock", "1d"}); err != nil || d != 24*time.Hour {
		t.Errorf("flag: %v %v", d, err)
	}
	if err := fs.Parse([]string{"--retry-lock", "soon"}); err == nil {
		t.Error("flag accepted soon")
	}
}
