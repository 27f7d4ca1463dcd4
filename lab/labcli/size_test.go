package labcli

import "testing"

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "1GiB", want: 1 << 30}, {in: "500MiB", want: 500 << 20}, {in: "10mb", want: 10e6},
		{in: "2 GB", want: 2e9}, {in: "4096", want: 4096}, {in: "1TiB", want: 1 << 40},
		{in: "", bad: true}, {in: "MiB", bad: true}, {in: "0MiB", bad: true}, {in: "-5MiB", bad: true},
		{in: "1.5GiB", bad: true}, {in: "3 parsecs", bad: true}, {in: "99999999999TiB", bad: true},
	} {
		got, err := parseSize(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("parseSize(%q) = %d, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}
