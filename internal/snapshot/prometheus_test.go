package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/siemctl/siemctl/internal/golden"
)

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// exposition renders d and parses it back: its series and its text.
func exposition(t *testing.T, d *Document) (map[string]float64, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := RenderPrometheus(&buf, d); err != nil {
		t.Fatal(err)
	}
	series, err := parseExposition(buf.String())
	if err != nil {
		t.Fatalf("invalid exposition: %v\n%s", err, buf.String())
	}
	return series, buf.String()
}

// parseExposition is a strict validator of the Prometheus text format as
// this package writes it (gauges only). It returns series → value, where a
// series is name{l1="v1",…} with labels sorted and values unescaped.
func parseExposition(text string) (map[string]float64, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("does not end with a newline")
	}
	series := map[string]float64{}
	help, typ := map[string]bool{}, map[string]string{}
	closed := map[string]bool{}
	current := ""
	open := func(name string) error {
		if name != current {
			if closed[name] {
				return fmt.Errorf("family %s is not contiguous", name)
			}
			if current != "" {
				closed[current] = true
			}
			current = name
		}
		return nil
	}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		where := fmt.Sprintf("line %d %q", n+1, line)
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, doc, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			if !metricNameRE.MatchString(name) || help[name] || typ[name] != "" || doc == "" {
				return nil, fmt.Errorf("%s: bad or repeated HELP (HELP must precede TYPE)", where)
			}
			if err := open(name); err != nil {
				return nil, err
			}
			if _, err := unescape(doc, false); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			help[name] = true
		case strings.HasPrefix(line, "# TYPE "):
			name, t, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			if !metricNameRE.MatchString(name) || typ[name] != "" {
				return nil, fmt.Errorf("%s: bad or repeated TYPE", where)
			}
			if t != "gauge" && t != "counter" && t != "untyped" {
				return nil, fmt.Errorf("%s: unexpected type %q", where, t)
			}
			if err := open(name); err != nil {
				return nil, err
			}
			typ[name] = t
		case strings.HasPrefix(line, "#") || line == "":
			return nil, fmt.Errorf("%s: unexpected line", where)
		default:
			key, value, err := parseSample(line)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			name, _, _ := strings.Cut(key, "{")
			if typ[name] == "" || !help[name] {
				return nil, fmt.Errorf("%s: sample without HELP and TYPE", where)
			}
			if err := open(name); err != nil {
				return nil, err
			}
			if _, dup := series[key]; dup {
				return nil, fmt.Errorf("%s: duplicate series", where)
			}
			series[key] = value
		}
	}
	return series, nil
}

func parseSample(line string) (string, float64, error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", 0, fmt.Errorf("no value")
	}
	name := line[:i]
	if !metricNameRE.MatchString(name) {
		return "", 0, fmt.Errorf("bad metric name %q", name)
	}
	rest := line[i:]
	var labels []string
	if rest[0] == '{' {
		rest = rest[1:]
		seen := map[string]bool{}
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 {
				return "", 0, fmt.Errorf("bad label in %q", rest)
			}
			lname := rest[:eq]
			if !labelNameRE.MatchString(lname) || strings.HasPrefix(lname, "__") || seen[lname] {
				return "", 0, fmt.Errorf("bad or repeated label name %q", lname)
			}
			seen[lname] = true
			rest = rest[eq+1:]
			if !strings.HasPrefix(rest, `"`) {
				return "", 0, fmt.Errorf("label value not quoted")
			}
			end := 1
			for ; end < len(rest); end++ {
				if rest[end] == '\\' {
					end++
					continue
				}
				if rest[end] == '"' {
					break
				}
			}
			if end >= len(rest) {
				return "", 0, fmt.Errorf("unterminated label value")
			}
			val, err := unescape(rest[1:end], true)
			if err != nil {
				return "", 0, err
			}
			labels = append(labels, lname+"="+strconv.Quote(val))
			rest = rest[end+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return "", 0, fmt.Errorf("expected , or } after label value")
			}
		}
	}
	if !strings.HasPrefix(rest, " ") {
		return "", 0, fmt.Errorf("no space before the value")
	}
	fields := strings.Fields(rest)
	if len(fields) != 1 {
		return "", 0, fmt.Errorf("want exactly one value (no timestamps in textfiles), got %q", rest)
	}
	var v float64
	switch fields[0] {
	case "NaN", "+Inf", "-Inf":
	default:
		var err error
		if v, err = strconv.ParseFloat(fields[0], 64); err != nil {
			return "", 0, fmt.Errorf("bad value: %w", err)
		}
	}
	sort.Strings(labels)
	key := name
	if len(labels) > 0 {
		key += "{" + strings.Join(labels, ",") + "}"
	}
	return key, v, nil
}

// unescape undoes \\ and \n (and \" in label values); any other escape or
// a raw quote in a label value is an error.
func unescape(s string, label bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", fmt.Errorf("dangling backslash")
			}
			i++
			switch s[i] {
			case '\\':
				b.WriteByte('\\')
			case 'n':
				b.WriteByte('\n')
			case '"':
				if !label {
					return "", fmt.Errorf(`\" in HELP`)
				}
				b.WriteByte('"')
			default:
				return "", fmt.Errorf("bad escape \\%c", s[i])
			}
		case c == '"' && label:
			return "", fmt.Errorf("raw quote in label value")
		case c == '\n':
			return "", fmt.Errorf("raw newline")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func TestValidatorRejectsBrokenExpositions(t *testing.T) {
	bad := map[string]string{
		"no newline":         "# HELP a x\n# TYPE a gauge\na 1",
		"no type":            "# HELP a x\na 1\n",
		"bad escape":         "# HELP a x\n# TYPE a gauge\na{l=\"\\t\"} 1\n",
		"raw quote":          "# HELP a x\n# TYPE a gauge\na{l=\"x\"y\"} 1\n",
		"duplicate":          "# HELP a x\n# TYPE a gauge\na{l=\"1\"} 1\na{l=\"1\"} 2\n",
		"not contiguous":     "# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\nb 1\na{x=\"1\"} 1\n",
		"bad value":          "# HELP a x\n# TYPE a gauge\na one\n",
		"bad name":           "# HELP 1a x\n# TYPE 1a gauge\n1a 1\n",
		"reserved label":     "# HELP a x\n# TYPE a gauge\na{__name__=\"b\"} 1\n",
		"timestamp in file":  "# HELP a x\n# TYPE a gauge\na 1 1700000000\n",
		"repeated help":      "# HELP a x\n# HELP a x\n# TYPE a gauge\na 1\n",
		"unterminated label": "# HELP a x\n# TYPE a gauge\na{l=\"1} 1\n",
	}
	for name, text := range bad {
		if _, err := parseExposition(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := parseExposition("# HELP a x \\\\ y\n# TYPE a gauge\na{l=\"q\\\"\\n\\\\\"} NaN\n"); err != nil {
		t.Errorf("valid text rejected: %v", err)
	}
}

func TestRenderPrometheusGolden(t *testing.T) {
	src := healthySource()
	d := mustCapture(t, src, fixedOpts())
	down := healthySource()
	down.ixErr, down.alertsErr = fmt.Errorf("connection refused"), fmt.Errorf("indexer unreachable")
	dd := mustCapture(t, down, fixedOpts())
	for name, doc := range map[string]*Document{"prometheus_healthy": d, "prometheus_down": dd} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderPrometheus(&buf, doc); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, name, buf.Bytes())
			if _, err := parseExposition(buf.String()); err != nil {
				t.Fatalf("invalid exposition: %v\n%s", err, buf.String())
			}
		})
	}

	series, _ := exposition(t, d)
	want := map[string]float64{
		`siemctl_snapshot_timestamp_seconds`:                                   float64(fixedNow.Unix()),
		`siemctl_component_up{component="indexer"}`:                            1,
		`siemctl_unit_active{component="manager",unit="siem-manager.service"}`: 1,
		`siemctl_indexer_cluster_status{status="yellow"}`:                      1,
		`siemctl_indexer_cluster_status{status="green"}`:                       0,
		`siemctl_indexer_docs{prefix="siem-alerts-4.x-"}`:                      91730,
		`siemctl_indexer_indices{prefix="siem-alerts-4.x-"}`:                   2,
		`siemctl_indexer_index_docs{index="siem-alerts-4.x-2026.11.21"}`:       1520,
		`siemctl_indexer_shards{state="UNASSIGNED"}`:                           1,
		`siemctl_agents{status="active"}`:                                      2,
		`siemctl_alerts_last_5m`:                                               42,
		`siemctl_health_check_status{check="agents"}`:                          1,
		`siemctl_health_check_status{check="units"}`:                           0,
	}
	for k, v := range want {
		if got, ok := series[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
}

// TestPrometheusAllocationAll: the gauge says what cluster.AllocationBack
// says, whatever the case of the value.
func TestPrometheusAllocationAll(t *testing.T) {
	d := mustCapture(t, healthySource(), fixedOpts())
	for v, want := range map[string]float64{"": 1, "all": 1, "ALL": 1, "primaries": 0, "none": 0} {
		d.Indexer.Settings["cluster.routing.allocation.enable"] = v
		series, _ := exposition(t, d)
		if got, ok := series["siemctl_indexer_allocation_all"]; !ok || got != want {
			t.Errorf("allocation.enable %q: siemctl_indexer_allocation_all = %v (present %v), want %v", v, got, ok, want)
		}
	}
}

func TestPrometheusEscapesLabels(t *testing.T) {
	d := mustCapture(t, healthySource(), fixedOpts())
	d.Host = "evil\"host\\with\nnewline"
	d.Health = append(d.Health, HealthResult{ID: `x"y`, Status: "CRIT"})
	series, text := exposition(t, d)
	if series[`siemctl_health_check_status{check="x\"y"}`] != 2 {
		t.Errorf("escaped check label not round-tripped:\n%s", text)
	}
	found := false
	for k := range series {
		if strings.HasPrefix(k, "siemctl_snapshot_info{") && strings.Contains(k, strconv.Quote("evil\"host\\with\nnewline")) {
			found = true
		}
	}
	if !found {
		t.Error("host label not round-tripped")
	}
}

// TestPrometheusCardinality: 5,000 indices over 250 days and 20 prefixes, and
// 100,000 agents, stay a bounded number of series.
func TestPrometheusCardinality(t *testing.T) {
	d := mustCapture(t, bigSource(5000, 100_000), fixedOpts())
	series, _ := exposition(t, d)
	count := map[string]int{}
	for k := range series {
		name, _, _ := strings.Cut(k, "{")
		count[name]++
	}
	if got := count["siemctl_indexer_index_docs"]; got != 2*20 { // 20 tenants × 2 days
		t.Errorf("per-index series = %d, want %d", got, 2*20)
	}
	if got := count["siemctl_indexer_docs"]; got != 20 { // 20 tenant prefixes
		t.Errorf("prefix series = %d, want 20", got)
	}
	if len(series) > 300 {
		t.Errorf("%d series in total: cardinality not bounded", len(series))
	}
	var sum float64
	for k, v := range series {
		if strings.HasPrefix(k, "siemctl_agents{") {
			sum += v
		}
	}
	if sum != 100_000 {
		t.Errorf("agents by status sum to %v", sum)
	}
}

func TestByNameCapsSeries(t *testing.T) {
	m := map[string]float64{}
	var total float64
	for i := range promMaxSeries + 50 {
		m[fmt.Sprintf("n%03d", i)] = float64(i)
		total += float64(i)
	}
	s := byName("x", m)
	if len(s) != promMaxSeries {
		t.Fatalf("%d samples, want %d", len(s), promMaxSeries)
	}
	var sum float64
	for _, x := range s {
		sum += x.value
	}
	if sum != total || s[len(s)-1].labels[1] != "_other" {
		t.Errorf("sum %v want %v; last %v", sum, total, s[len(s)-1].labels)
	}
}

func TestIndexPrefix(t *testing.T) {
	tests := []struct{ name, prefix, day string }{
		{"siem-alerts-4.x-2026.11.21", "siem-alerts-4.x-", "2026-11-21"},
		{"logs-2026-01-02", "logs-", "2026-01-02"},
		{"monthly-2026.01", "monthly-", ""},
		{".ds-events-000001", ".ds-events-", ""},
		{".opendistro_security", ".opendistro_security", ""},
		{"2026.11.21", "2026.11.21", ""}, // nothing left as a prefix
		{"bad-2026.13.45", "bad-", ""},
	}
	for _, tc := range tests {
		p, day, _ := indexPrefix(tc.name)
		gotDay := ""
		if !day.IsZero() {
			gotDay = day.Format("2006-01-02")
		}
		if p != tc.prefix || gotDay != tc.day {
			t.Errorf("%s: %q %q, want %q %q", tc.name, p, gotDay, tc.prefix, tc.day)
		}
	}
}

func TestWritePrometheusAtomic(t *testing.T) {
	// The unit runs with UMask=0027: the file must still be world-readable
	// for node_exporter.
	old := syscall.Umask(0o027)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "textfile_collector")
	path := filepath.Join(dir, "siemctl.prom")
	d := mustCapture(t, healthySource(), fixedOpts())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePrometheus(path, d); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseExposition(string(b)); err != nil {
		t.Fatalf("written file invalid: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("leftover files: %v", ents)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (node_exporter must read it)", info.Mode().Perm())
	}
	if err := WritePrometheus(filepath.Join(path, "sub", "x.prom"), d); err == nil {
		t.Error("writing under a file: no error")
	}
}
