package snapshot

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/siemctl/siemctl/internal/redact"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/golden"
)

func mustCapture(t *testing.T, src Source, opts CaptureOptions) *Document {
	t.Helper()
	d, err := Capture(context.Background(), src, opts)
	if err != nil {
		t.Fatalf("Capture: %v", err)
	}
	return d
}

func mustMarshal(t *testing.T, d *Document) []byte {
	t.Helper()
	b, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCaptureGolden(t *testing.T) {
	down := healthySource()
	down.ixErr = errors.New(`GET https://127.0.0.1:9200/_cluster/health: dial tcp 127.0.0.1:9200: connect: connection refused`)
	down.units["indexer"] = unitState("siem-indexer.service", "failed", "failed", 3)
	down.units["shipper"] = unitState("shipper.service", "inactive", "dead", 0)
	down.alertsErr = errors.New("indexer unreachable")
	down.dash = nil // a Source bug: nil state without an error

	partial := healthySource()
	partial.ix.Errors = map[string]error{"templates": errors.New("403 Forbidden: no permissions for [indices:admin/template/get]")}
	partial.ix.Templates = nil
	partial.mgr.Errors = map[string]error{"api_users": errors.New("403: permission denied")}
	partial.mgr.APIUsers = nil
	partial.pkgsErr = errors.New("dpkg-query: not found")
	partial.pkgs = nil

	cases := map[string]*fakeSource{
		"capture_healthy": healthySource(),
		"capture_down":    down,
		"capture_partial": partial,
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			d := mustCapture(t, src, fixedOpts())
			golden.Assert(t, name, mustMarshal(t, d))
			// Round trip: what Save writes, Unmarshal reads back equal.
			back, err := Unmarshal(mustMarshal(t, d))
			if err != nil {
				t.Fatal(err)
			}
			if string(mustMarshal(t, back)) != string(mustMarshal(t, d)) {
				t.Error("document does not survive a JSON round trip")
			}
		})
	}
}

func TestCaptureRecordsDownComponents(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*fakeSource)
		wantDown  []string
		wantParts []string
	}{
		{"healthy", func(*fakeSource) {}, []string{}, []string{}},
		{"indexer down", func(f *fakeSource) { f.ixErr = errors.New("connection refused") }, []string{"indexer"}, []string{"indexer"}},
		{"manager down", func(f *fakeSource) { f.mgrErr = errors.New("401 unauthorized") }, []string{"manager"}, []string{"manager"}},
		{"dashboard down", func(f *fakeSource) { f.dashErr = errors.New("503") }, []string{"dashboard"}, []string{"dashboard"}},
		{"shipper stopped", func(f *fakeSource) { f.units["shipper"] = unitState("shipper.service", "inactive", "dead", 0) }, []string{"shipper"}, []string{}},
		{"systemd unreachable", func(f *fakeSource) { f.units, f.unitsErr = nil, errors.New("dbus: no such socket") }, []string{"shipper"}, []string{"units"}},
		{"everything down", func(f *fakeSource) {
			f.ixErr, f.mgrErr, f.dashErr, f.alertsErr, f.healthErr = errors.New("x"), errors.New("x"), errors.New("x"), errors.New("x"), errors.New("x")
			f.units, f.unitsErr, f.pkgs, f.pkgsErr = nil, errors.New("x"), nil, errors.New("x")
		}, []string{"dashboard", "indexer", "manager", "shipper"}, []string{"alerts", "dashboard", "health", "indexer", "manager", "packages", "units"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := healthySource()
			tc.mutate(src)
			d := mustCapture(t, src, fixedOpts())
			if got := strings.Join(d.Summary.Down, ","); got != strings.Join(tc.wantDown, ",") {
				t.Errorf("down = %q, want %q", got, strings.Join(tc.wantDown, ","))
			}
			var parts []string
			for _, e := range d.Errors {
				parts = append(parts, e.Part)
			}
			if got := strings.Join(parts, ","); got != strings.Join(tc.wantParts, ",") {
				t.Errorf("failed parts = %q, want %q", got, strings.Join(tc.wantParts, ","))
			}
			for _, name := range tc.wantDown {
				c := d.Components[name]
				if c.Reachable || !strings.HasPrefix(c.Error, "unreachable: ") {
					t.Errorf("%s: reachable=%v error=%q, want unreachable with a reason", name, c.Reachable, c.Error)
				}
			}
			if d.Summary.ComponentsTotal != 4 || d.Summary.ComponentsUp != 4-len(tc.wantDown) {
				t.Errorf("summary up %d/%d", d.Summary.ComponentsUp, d.Summary.ComponentsTotal)
			}
			b := mustMarshal(t, d)
			if strings.Contains(string(b), "null") {
				t.Errorf("document holds null:\n%s", b)
			}
		})
	}
}

// deadlineCtx is a context whose deadline passes when the test says so.
type deadlineCtx struct {
	context.Context
	done chan struct{}
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestCaptureDeadline(t *testing.T) {
	src := healthySource()
	src.blockManager = true
	src.hangAlerts = make(chan struct{})
	t.Cleanup(func() { close(src.hangAlerts) }) // let the hung goroutine end
	ctx := &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(5) // the five parts that answer
	src.answered = wg.Done
	go func() { wg.Wait(); close(ctx.done) }() // the deadline passes once they have
	d, err := Capture(ctx, src, fixedOpts())
	if err != nil {
		t.Fatal(err)
	}
	if d.Manager.Reachable || !strings.Contains(d.Manager.Error, "deadline") {
		t.Errorf("manager = %+v, want unreachable by deadline", d.Manager)
	}
	if d.Alerts.Reachable || !strings.Contains(d.Alerts.Error, "no answer before the deadline") {
		t.Errorf("alerts = %+v, want no answer before the deadline", d.Alerts)
	}
	if !d.Indexer.Reachable || !d.Components["indexer"].Reachable || len(d.Health) == 0 {
		t.Errorf("parts that answered before the deadline are recorded down: %+v", d.Errors)
	}
}

func TestCaptureTimeoutOption(t *testing.T) {
	src := healthySource()
	src.blockManager = true
	opts := fixedOpts()
	opts.Timeout = time.Millisecond
	d := mustCapture(t, src, opts)
	if d.Manager.Reachable || !strings.Contains(d.Manager.Error, "deadline") {
		t.Errorf("manager = %+v, want unreachable by the capture timeout", d.Manager)
	}
}

func TestCaptureCancelledFails(t *testing.T) {
	src := healthySource()
	src.blockManager = true
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Capture(ctx, src, fixedOpts()); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCaptureSurvivesPanickingSource(t *testing.T) {
	src := healthySource()
	src.panicHealth = true
	d := mustCapture(t, src, fixedOpts())
	if len(d.Errors) != 1 || d.Errors[0].Part != "health" || !strings.Contains(d.Errors[0].Error, "internal error") {
		t.Errorf("errors = %+v, want the health part's panic recorded", d.Errors)
	}
}

func TestCaptureInvalidLabel(t *testing.T) {
	for _, l := range []string{"has space", "-lead", "new\nline", strings.Repeat("x", 65), "a/b"} {
		opts := fixedOpts()
		opts.Label = l
		if _, err := Capture(context.Background(), healthySource(), opts); !errors.Is(err, ErrInvalidLabel) {
			t.Errorf("label %q: err = %v, want ErrInvalidLabel", l, err)
		}
	}
	for _, l := range []string{"", "timer", "pre-upgrade:4.10.0", "run_20261121.1"} {
		if err := ValidateLabel(l); err != nil {
			t.Errorf("label %q rejected: %v", l, err)
		}
	}
}

// TestCaptureNeverHoldsSecrets feeds the configured secrets through every
// channel a Source has (errors, values, map keys, encoded forms) and checks
// none of them, in any encoding, reaches the document.
func TestCaptureNeverHoldsSecrets(t *testing.T) {
	const idxPass = `Idx-S3cret"pa\ss`
	const mgrPass = "mgr-T0ken-9f8e7d"
	const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzaWVtIn0.c2lnbmF0dXJl"
	secrets := []string{idxPass, mgrPass, jwt}

	src := healthySource()
	src.ixErr = errors.New("GET https://admin:" + url.QueryEscape(idxPass) + "@127.0.0.1:9200/: 401 with password " + idxPass)
	src.mgr.Info["auth"] = "Bearer " + jwt
	src.mgr.Info["basic"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(mgrPass))
	src.mgr.Daemons[mgrPass] = "running"
	src.mgr.APIUsers = append(src.mgr.APIUsers, "user-"+mgrPass)
	src.mgr.Errors = map[string]error{"agents": errors.New(`body {"password":"` + jsonEscape(idxPass) + `"}`)}
	src.dashErr = errors.New("dashboard said: token=" + jwt)
	src.units["shipper"] = UnitState{Name: "shipper.service", ActiveState: "failed", SubState: mgrPass}
	src.health = append(src.health, HealthResult{ID: "secrets", Status: "WARN", Summary: "default password " + mgrPass + " in use"})
	src.alertsErr = errors.New(strings.Repeat(idxPass, 3))

	opts := fixedOpts()
	opts.Redactor = redact.New(secrets...)
	d := mustCapture(t, src, opts)
	out := string(mustMarshal(t, d))

	var forms []string
	for _, s := range secrets {
		forms = append(forms, s, url.QueryEscape(s), jsonEscape(s), base64.StdEncoding.EncodeToString([]byte(s)))
	}
	forms = append(forms, "S3cret", "T0ken") // no fragment survives either
	for _, f := range forms {
		if strings.Contains(out, f) {
			t.Errorf("snapshot contains secret form %q", f)
		}
	}
	// Every other output made from the document is clean too.
	var prom, diffJSON, show bytes.Buffer
	if err := RenderPrometheus(&prom, d); err != nil {
		t.Fatal(err)
	}
	rep := Diff(mustCapture(t, healthySource(), fixedOpts()), d, DiffOptions{})
	_ = RenderDiffJSON(&diffJSON, rep)
	_ = RenderDocumentText(&show, d, false)
	out += prom.String() + diffJSON.String() + show.String()
	if !strings.Contains(out, Redacted) {
		t.Error("nothing was redacted: the test did not exercise the scrubber")
	}
	// The rest of the document is intact.
	if d.Manager.Daemons["siem-analysisd"] != "running" || d.Manager.Daemons[Redacted] != "running" {
		t.Errorf("daemons = %v", d.Manager.Daemons)
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

func TestHashJSONCanonical(t *testing.T) {
	a := HashJSON([]byte(`{"b": 1, "a": {"y": [1, 2], "x": "s"}}`))
	b := HashJSON([]byte("{\"a\":{\"x\":\"s\",\"y\":[1,2]},\n \"b\":1}"))
	if a != b || !strings.HasPrefix(a, "sha256:") {
		t.Errorf("key order or whitespace changed the hash: %s vs %s", a, b)
	}
	for _, other := range []string{`{"b": 2, "a": {"y": [1, 2], "x": "s"}}`, `{"b": 1, "a": {"y": [2, 1], "x": "s"}}`, `{"b": 1}`} {
		if HashJSON([]byte(other)) == a {
			t.Errorf("%s hashes like the original", other)
		}
	}
	if h := HashJSON([]byte(`{not json`)); !strings.HasPrefix(h, "sha256-raw:") {
		t.Errorf("invalid JSON hash = %s", h)
	}
	if h := HashJSON([]byte(`{} {}`)); !strings.HasPrefix(h, "sha256-raw:") {
		t.Errorf("trailing data hash = %s", h)
	}
}

func TestDigestSettings(t *testing.T) {
	nested := `{"persistent":{"cluster":{"routing":{"allocation":{"enable":"primaries"}},"max_shards_per_node":"2000"}},"transient":{"cluster":{"routing":{"allocation":{"enable":"all"}}}}}`
	flat := `{"transient":{"cluster.routing.allocation.enable":"all"},"persistent":{"cluster.max_shards_per_node":"2000","cluster.routing.allocation.enable":"primaries"},"defaults":{"cluster.routing.allocation.disk.watermark.low":"85%"}}`
	sn, hn, err := digestSettings([]byte(nested))
	if err != nil {
		t.Fatal(err)
	}
	sf, hf, err := digestSettings([]byte(flat))
	if err != nil {
		t.Fatal(err)
	}
	if hn != hf {
		t.Errorf("nested and flat bodies hash differently (defaults must not count): %s %s", hn, hf)
	}
	if sn["cluster.routing.allocation.enable"] != "all" {
		t.Errorf("transient must win over persistent: %q", sn["cluster.routing.allocation.enable"])
	}
	if sf["cluster.routing.allocation.disk.watermark.low"] != "85%" || sn["cluster.routing.allocation.disk.watermark.low"] != "" {
		t.Errorf("defaults: %q / %q", sf["cluster.routing.allocation.disk.watermark.low"], sn["cluster.routing.allocation.disk.watermark.low"])
	}
	if len(sn) != len(importantSettings) {
		t.Errorf("settings keys = %d, want %d", len(sn), len(importantSettings))
	}
	for _, bad := range []string{`[]`, `{`, `"x"`} {
		if _, _, err := digestSettings([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, h, err := digestSettings(nil); err != nil || h == "" {
		t.Errorf("empty body: %v %q", err, h)
	}
}

func TestMaxShardsPerNode(t *testing.T) {
	tests := []struct {
		settings string
		want     int
	}{
		{`{}`, 1000},
		{`{"persistent":{"cluster.max_shards_per_node":"3000"}}`, 3000},
		{`{"persistent":{"cluster.max_shards_per_node":"nope"}}`, 1000},
	}
	for _, tc := range tests {
		src := healthySource()
		src.ix.Settings = json.RawMessage(tc.settings)
		if got := mustCapture(t, src, fixedOpts()).Indexer.MaxShardsPerNode; got != tc.want {
			t.Errorf("%s: max_shards_per_node = %d, want %d", tc.settings, got, tc.want)
		}
	}
}

func TestTemplateMatches(t *testing.T) {
	const idx = "siem-alerts-4.x-2026.11.21"
	tests := []struct {
		body string
		want bool
	}{
		{`{"index_patterns":["siem-alerts-4.x-*"]}`, true},
		{`{"index_patterns":"siem-archives-*,siem-alerts-*"}`, true},
		{`{"index_template":{"index_patterns":["siem-alerts-*"]}}`, true},
		{`{"template":"siem-alerts-4.x-*"}`, true},
		{`{"template":{"settings":{}},"index_patterns":["other-*"]}`, false},
		{`{"index_patterns":["siem-alerts-3.x-*"]}`, false},
		{`{"index_patterns":["[invalid"]}`, false},
		{`not json`, false},
	}
	for _, tc := range tests {
		if got := templateMatches([]byte(tc.body), idx); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.body, got, tc.want)
		}
	}
}

func TestAggregateAgents(t *testing.T) {
	a := aggregateAgents([]Agent{
		{ID: "000", Status: "active", Version: "v4.9.0"},
		{ID: "001", Status: "active", Version: "v4.9.0"},
		{ID: "002", Status: "disconnected", Version: "v4.8.0"},
		{ID: "003", Status: "never_connected"},
	})
	if a.Total != 3 || a.ByStatus["active"] != 1 || a.ByStatus["disconnected"] != 1 || a.ByVersion["unknown"] != 1 || a.ByVersion["v4.9.0"] != 1 {
		t.Errorf("aggregate = %+v", a)
	}
	src := healthySource()
	src.mgr.AgentList = nil
	src.mgr.AgentCounts = &Agents{ByStatus: map[string]int{"active": 7}, Total: 7}
	d := mustCapture(t, src, fixedOpts())
	if d.Manager.Agents.Total != 7 || d.Manager.Agents.ByVersion == nil {
		t.Errorf("pre-aggregated counts: %+v", d.Manager.Agents)
	}
}

func TestNewIDSortable(t *testing.T) {
	a, err := NewID(fixedNow, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, later := range []time.Duration{time.Second, time.Millisecond, time.Microsecond} {
		b, _ := NewID(fixedNow.Add(later), nil)
		if !validID(a) || !validID(b) || !(a < b) {
			t.Errorf("ids %q %q (%s later) not valid and sorted", a, b, later)
		}
	}
	if !validID("20261121T093000Z-3f9a1c") {
		t.Error("the id of a snapshot from an older siemctl is not valid")
	}
	if _, err := NewID(fixedNow, strings.NewReader("")); err == nil {
		t.Error("short random source: no error")
	}
}
