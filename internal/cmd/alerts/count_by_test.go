package alerts_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/cmd/alerts"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
)

// histogramBody is a date_histogram answer over the six hours before now, one of them empty (the
// gap an operator looks for) and one with a single alert (it must still show a bar).
func histogramBody() []byte {
	counts := []int{120, 340, 0, 1, 95, 260, 17}
	var b strings.Builder
	b.WriteString(`{"took":3,"timed_out":false,"_shards":{"total":2,"successful":2,"skipped":0,"failed":0},"hits":{"total":{"value":833,"relation":"eq"},"max_score":null,"hits":[]},"aggregations":{"per":{"buckets":[`)
	for i, c := range counts {
		start := now.Add(-6 * time.Hour).Add(time.Duration(i) * time.Hour)
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"key_as_string":"%s","key":%d,"doc_count":%d}`, start.Format("2006-01-02T15:04:05.000Z"), start.UnixMilli(), c)
	}
	b.WriteString(`]}}}`)
	return []byte(b.String())
}

func TestCountBy(t *testing.T) {
	for _, mode := range []struct {
		name, output string
		tty          bool
	}{{"table", "table", false}, {"tty", "table", true}, {"json", "json", false}} {
		t.Run(mode.name, func(t *testing.T) {
			srv := indexertest.NewServer(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Body: histogramBody()}})
			f, _, out, _ := testFactory(t, newStack(t, srv), mode.output, mode.tty)
			f.IO.SetWidth(72)
			f.IO.DisableColor()
			if err := clitest.Exec(alerts.NewCmdCount(f, nil), "--since", "6h", "--by", "1h"); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "count-by-"+mode.name, out.Bytes())
			var body struct {
				Size int `json:"size"`
				Aggs struct {
					Per struct {
						H struct {
							Field    string           `json:"field"`
							Interval string           `json:"fixed_interval"`
							MinDocs  int              `json:"min_doc_count"`
							Bounds   map[string]int64 `json:"extended_bounds"`
						} `json:"date_histogram"`
					} `json:"per"`
				} `json:"aggs"`
			}
			req := lastBody(t, srv, "POST /siem-alerts-4.x-*/_search", &body)
			h := body.Aggs.Per.H
			if body.Size != 0 || h.Field != "timestamp" || h.Interval != "3600s" || h.MinDocs != 0 ||
				h.Bounds["min"] != now.Add(-6*time.Hour).UnixMilli() || h.Bounds["max"] != now.UnixMilli() {
				t.Errorf("histogram request %s", req.Body)
			}
		})
	}
	t.Run("tty-bars", func(t *testing.T) {
		srv := indexertest.NewServer(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Body: histogramBody()}})
		f, _, out, _ := testFactory(t, newStack(t, srv), "table", true)
		f.IO.SetWidth(72)
		f.IO.DisableColor()
		cmd := alerts.NewCmdCount(f, nil)
		cmd.SetArgs([]string{"--since", "6h", "--by", "1h"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		for _, l := range lines {
			if len([]rune(l)) > 72 {
				t.Errorf("line wider than the terminal: %q", l)
			}
		}
		// The busiest hour has the longest bar, the empty hour none, the single alert a sliver.
		barOf := func(l string) int {
			return strings.Count(l, "█")*8 + strings.IndexFunc(l, func(r rune) bool { return strings.ContainsRune("▏▎▍▌▋▊▉", r) })
		}
		if !strings.HasSuffix(strings.TrimSpace(lines[1]), " 340") || strings.ContainsAny(lines[2], "█▏") || !strings.ContainsAny(lines[3], "▏") || barOf(lines[1]) <= barOf(lines[0]) {
			t.Errorf("bars:\n%s", out.String())
		}
	})
	for _, c := range []struct{ args []string }{
		{[]string{"--since", "1h", "--by", "2h"}},
		{[]string{"--since", "30d", "--by", "1s"}},
		{[]string{"--since", "1h", "--by", "1x"}},
	} {
		if _, err := clitest.Parse(alerts.NewCmdCount, c.args...); cli.ExitCode(err) != 2 {
			t.Errorf("%v: %v (exit %d), want a usage error", c.args, err, cli.ExitCode(err))
		}
	}
}
