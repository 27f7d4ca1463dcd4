package indexer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	indexercmd "github.com/siemctl/siemctl/internal/cmd/indexer"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/lock"
)

// settingsState is a stateful _cluster/settings (flat keys, null deletes).
type settingsState struct {
	mu         sync.Mutex
	persistent map[string]any
	transient  map[string]any
	noAck      bool
	ignore     bool // acknowledge but do not apply
	puts       []string
}

func (s *settingsState) routes(srv *indexertest.Server) {
	srv.Set("GET /_cluster/settings", indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"persistent": s.persistent, "transient": s.transient})
	}})
	srv.Set("PUT /_cluster/settings", indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		// indexertest has read the body already: take it from the record.
		last, _ := srv.Last("PUT /_cluster/settings")
		b := last.Body
		var body struct{ Persistent, Transient map[string]any }
		_ = json.Unmarshal(b, &body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.puts = append(s.puts, string(b))
		if !s.ignore {
			for k, v := range body.Persistent {
				if v == nil {
					delete(s.persistent, k)
				} else {
					s.persistent[k] = v
				}
			}
			for k, v := range body.Transient {
				if v == nil {
					delete(s.transient, k)
				} else {
					s.transient[k] = v
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"acknowledged": !s.noAck, "persistent": body.Persistent, "transient": body.Transient})
	}})
}

func newState(srv *indexertest.Server) *settingsState {
	s := &settingsState{persistent: map[string]any{}, transient: map[string]any{}}
	s.routes(srv)
	return s
}

func writeConfig(t *testing.T, url string) string {
	t.Helper()
	d := t.TempDir()
	pw := clitest.WriteSecret(t, d, "pw", indexertest.Password)
	return clitest.WriteConfig(t, d, "state_dir: "+d+"/state\n"+
		"indexer: {url: \""+url+"\", username: "+indexertest.Username+", password_file: "+pw+", ca_file: \"\"}\n"+
		"manager: {api_url: \"http://127.0.0.1:9\", password_file: "+pw+"}\n")
}

func run(t *testing.T, cfg string, tty bool, args ...string) clitest.Result {
	t.Helper()
	return runIn(t, cfg, tty, "", args...)
}

// runIn runs `siemctl indexer --config cfg args...` with stdin (a
// terminal's answers when tty); the password must not reach the output.
func runIn(t *testing.T, cfg string, tty bool, stdin string, args ...string) clitest.Result {
	t.Helper()
	r := clitest.Main(context.Background(), clitest.Group(indexercmd.NewCmdIndexer), tty, stdin, append([]string{"indexer", "--config", cfg}, args...)...)
	clitest.NoSecret(t, "the output", r.Out+r.ErrOut, indexertest.Password)
	return r
}

func TestAllocation(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	st := newState(srv)
	cfg := writeConfig(t, srv.URL)

	r := run(t, cfg, false, "allocation")
	if r.Code != 0 {
		t.Fatalf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "allocation_show_default", []byte(r.Out))

	r = run(t, cfg, false, "allocation", "primaries", "-o", "json", "--yes")
	if r.Code != 0 {
		t.Fatalf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "allocation_primaries_json", []byte(r.Out))
	if st.persistent["cluster.routing.allocation.enable"] != "primaries" {
		t.Errorf("not set: %v", st.persistent)
	}

	// A transient "none" would win over the persistent value: it is removed.
	st.transient["cluster.routing.allocation.enable"] = "none"
	r = run(t, cfg, false, "allocation", "show")
	golden.Assert(t, "allocation_show_transient", []byte(r.Out))
	r = run(t, cfg, false, "allocation", "all", "--yes")
	if r.Code != 0 {
		t.Fatalf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "allocation_all_table", []byte(r.Out))
	if _, ok := st.transient["cluster.routing.allocation.enable"]; ok || st.persistent["cluster.routing.allocation.enable"] != "all" {
		t.Errorf("transient %v persistent %v", st.transient, st.persistent)
	}

	// OpenSearch reads the value in any case: "ALL" is all (no hint).
	st.persistent["cluster.routing.allocation.enable"] = "ALL"
	if r := run(t, cfg, false, "allocation"); r.Code != 0 || strings.Contains(r.ErrOut, "not being allocated") {
		t.Errorf("ALL judged as not all: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	st.persistent["cluster.routing.allocation.enable"] = "primaries"
	if r := run(t, cfg, false, "allocation"); r.Code != 0 || !strings.Contains(r.ErrOut, "not being allocated") {
		t.Errorf("primaries without the hint: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	st.persistent["cluster.routing.allocation.enable"] = "all"

	// acknowledged=false and a change that does not stick are failures.
	st.noAck = true
	if r := run(t, cfg, false, "allocation", "primaries", "--yes"); r.Code != 1 || !strings.Contains(r.ErrOut, "acknowledged=false") {
		t.Errorf("noack: exit %d %s", r.Code, r.ErrOut)
	}
	st.noAck, st.ignore = false, true
	if r := run(t, cfg, false, "allocation", "all", "--yes"); r.Code != 1 || !strings.Contains(r.ErrOut, "not in effect") {
		t.Errorf("not applied: exit %d %s", r.Code, r.ErrOut)
	}

	n := len(st.puts)
	if r := run(t, cfg, false, "allocation", "none"); r.Code != 2 || !strings.Contains(r.ErrOut, `allocation "none": use show, primaries or all`) {
		t.Errorf("bad value: exit %d %s", r.Code, r.ErrOut)
	}
	if len(st.puts) != n {
		t.Error("a bad value was sent")
	}
}

func TestShards(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	st := newState(srv)
	st.persistent["cluster.routing.allocation.enable"] = "primaries"
	srv.Set("GET /_cat/shards", indexertest.Route{File: "cat-shards.json"})
	// The explanation of the fixture, for the shard asked about.
	srv.Set("GET /_cluster/allocation/explain", indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		last, _ := srv.Last("GET /_cluster/allocation/explain")
		var ask, e map[string]any
		_ = json.Unmarshal(last.Body, &ask)
		_ = json.Unmarshal(indexertest.Fixture(t, "explain-primaries.json"), &e)
		for _, k := range []string{"index", "shard", "primary"} {
			e[k] = ask[k]
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(e)
	}})
	cfg := writeConfig(t, srv.URL)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"shards_table", []string{"shards"}},
		{"shards_unassigned_table", []string{"shards", "--unassigned"}},
		{"shards_unassigned_json", []string{"shards", "--unassigned", "-o", "json"}},
	} {
		r := run(t, cfg, false, tc.args...)
		if r.Code != 0 {
			t.Fatalf("%s: exit %d %s", tc.name, r.Code, r.ErrOut)
		}
		golden.Assert(t, tc.name, []byte(r.Out))
		if strings.Contains(tc.name, "unassigned_table") && !strings.Contains(r.ErrOut, "fix: allocation is left at primaries (persistent): set it back with `siemctl indexer allocation all`") {
			t.Errorf("no fix hint: %s", r.ErrOut)
		}
	}
	// one explain call per unassigned shard, for that shard
	var bodies []string
	for _, rq := range srv.Requests() {
		if rq.Path == "/_cluster/allocation/explain" {
			bodies = append(bodies, string(rq.Body))
		}
	}
	if len(bodies) != 9 || !strings.Contains(bodies[0], `"index":".opendistro-job-scheduler-lock"`) || !strings.Contains(bodies[0], `"primary":false`) {
		t.Errorf("explain bodies %v", bodies)
	}
	r := run(t, cfg, false, "shards", "--unassigned", "--explain-limit", "1")
	if !strings.Contains(r.ErrOut, "2 more unassigned shards not explained") {
		t.Errorf("limit: %s", r.ErrOut)
	}
}

func TestFlush(t *testing.T) {
	tests := []struct {
		name   string
		synced indexertest.Route
		code   int
		errMsg string
	}{
		{"flush_ok", indexertest.Route{File: "flush.json"}, 0, ""},
		{"flush_synced_partial", indexertest.Route{Status: 409, File: "flush-synced-409.json"}, 0, "synced flush partially failed: acceptable"},
		{"flush_synced_unsupported", indexertest.Route{Status: 400, File: "no-handler-400.json"}, 0, "no synced flush"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := indexertest.NewServer(t, indexertest.Healthy())
			srv.Set("POST /_flush/synced", tt.synced)
			cfg := writeConfig(t, srv.URL)
			r := run(t, cfg, false, "flush", "--yes")
			if r.Code != tt.code || !strings.Contains(r.ErrOut, tt.errMsg) {
				t.Errorf("exit %d %s", r.Code, r.ErrOut)
			}
			golden.Assert(t, tt.name, []byte(r.Out))
		})
	}
	srv := indexertest.NewServer(t, indexertest.Healthy())
	srv.Set("POST /_flush", indexertest.Route{Status: 403, File: "forbidden-403.json"})
	r := run(t, writeConfig(t, srv.URL), false, "flush", "-o", "json", "--yes")
	if r.Code != 4 {
		t.Errorf("forbidden flush: exit %d %s", r.Code, r.ErrOut)
	}
	if _, ok := srv.Last("POST /_flush/synced"); ok {
		t.Error("synced flush after a failed flush")
	}
}

func TestWatermark(t *testing.T) {
	srv := indexertest.NewServer(t, indexertest.Healthy())
	st := newState(srv)
	st.persistent["cluster.routing.allocation.disk.watermark.low"] = "80%"
	cfg := writeConfig(t, srv.URL)

	r := run(t, cfg, false, "watermark")
	golden.Assert(t, "watermark_show", []byte(r.Out))
	r = run(t, cfg, false, "watermark", "--recover", "--yes")
	if r.Code != 0 {
		t.Fatalf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "watermark_recover_table", []byte(r.Out))
	want := map[string]any{"cluster.routing.allocation.disk.watermark.low": "95%", "cluster.routing.allocation.disk.watermark.high": "95%", "cluster.routing.allocation.disk.watermark.flood_stage": "98%"}
	for k, v := range want {
		if st.transient[k] != v {
			t.Errorf("%s = %v", k, st.transient[k])
		}
	}
	r = run(t, cfg, true, "watermark")
	if !strings.Contains(r.ErrOut, "3 transient watermark override(s) set") {
		t.Errorf("no reminder: %s", r.ErrOut)
	}
	r = run(t, cfg, false, "watermark", "--clear", "-o", "json", "--yes")
	if r.Code != 0 {
		t.Fatalf("exit %d %s", r.Code, r.ErrOut)
	}
	golden.Assert(t, "watermark_clear_json", []byte(r.Out))
	if len(st.transient) != 0 || st.persistent["cluster.routing.allocation.disk.watermark.low"] != "80%" {
		t.Errorf("after clear: transient %v persistent %v", st.transient, st.persistent)
	}
	n := len(st.puts)
	r = run(t, cfg, false, "watermark", "--clear", "--yes")
	if r.Code != 0 || len(st.puts) != n || !strings.Contains(r.ErrOut, "no transient watermark override was set") {
		t.Errorf("clear of nothing: exit %d puts %d %s", r.Code, len(st.puts)-n, r.ErrOut)
	}
	if r := run(t, cfg, false, "watermark", "--clear", "--recover"); r.Code != 2 || len(st.puts) != n {
		t.Errorf("both flags: exit %d", r.Code)
	}
	st.ignore = true
	if r := run(t, cfg, false, "watermark", "--recover", "--yes"); r.Code != 1 || !strings.Contains(r.ErrOut, "not in effect") {
		t.Errorf("not applied: exit %d %s", r.Code, r.ErrOut)
	}
}

// mutating returns the requests that could change the indexer (anything but GET/HEAD).
func mutating(srv *indexertest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// TestChangePolicy: every changing form of allocation, flush and watermark
// asks on a terminal, needs --yes off one, takes the host lock (exit 6
// naming the holder while an upgrade holds it) and has a --dry-run that
// prints its requests and sends none of them.
func TestChangePolicy(t *testing.T) {
	forms := []struct {
		args []string
		// call is a line the dry run prints.
		call string
		// setup prepares the settings (watermark --clear needs an override to remove).
		setup func(*settingsState)
	}{
		{[]string{"allocation", "primaries"}, `PUT /_cluster/settings {"persistent":{"cluster.routing.allocation.enable":"primaries"},"transient":{}}`, nil},
		{[]string{"allocation", "all"}, `PUT /_cluster/settings {"persistent":{"cluster.routing.allocation.enable":"all"},"transient":{"cluster.routing.allocation.enable":null}}`,
			func(s *settingsState) { s.transient["cluster.routing.allocation.enable"] = "none" }},
		{[]string{"flush"}, "POST /_flush/synced", nil},
		{[]string{"watermark", "--recover"}, `"cluster.routing.allocation.disk.watermark.flood_stage":"98%"`, nil},
		{[]string{"watermark", "--clear"}, `PUT /_cluster/settings {"persistent":{},"transient":{"cluster.routing.allocation.disk.watermark.low":null}}`,
			func(s *settingsState) { s.transient["cluster.routing.allocation.disk.watermark.low"] = "95%" }},
	}
	for _, fm := range forms {
		t.Run(strings.Join(fm.args, "_"), func(t *testing.T) {
			srv := indexertest.NewServer(t, indexertest.Healthy())
			st := newState(srv)
			if fm.setup != nil {
				fm.setup(st)
			}
			cfg := writeConfig(t, srv.URL)
			stateDir := filepath.Join(filepath.Dir(cfg), "state")

			// Off a terminal without --yes: usage error, nothing sent.
			if r := run(t, cfg, false, fm.args...); r.Code != 2 || !strings.Contains(r.ErrOut, "--yes") || len(mutating(srv)) != 0 {
				t.Fatalf("no tty, no --yes: exit %d, sent %v, %s", r.Code, mutating(srv), r.ErrOut)
			}
			// On a terminal, "n" declines: nothing sent.
			if r := runIn(t, cfg, true, "n\n", fm.args...); r.Code == 0 || !strings.Contains(r.ErrOut, "[y/N]") || len(mutating(srv)) != 0 {
				t.Fatalf("declined: exit %d, sent %v, %s", r.Code, mutating(srv), r.ErrOut)
			}
			// --dry-run prints each request, sends none, asks nothing.
			r := run(t, cfg, false, append(fm.args, "--dry-run")...)
			if r.Code != 0 || !strings.Contains(r.Out, fm.call) || len(mutating(srv)) != 0 {
				t.Fatalf("dry run: exit %d, sent %v, out %q err %s", r.Code, mutating(srv), r.Out, r.ErrOut)
			}
			r = run(t, cfg, false, append(fm.args, "--dry-run", "-o", "json")...)
			var dj struct {
				DryRun bool     `json:"dry_run"`
				Calls  []string `json:"calls"`
			}
			if err := json.Unmarshal([]byte(r.Out), &dj); err != nil || !dj.DryRun || len(dj.Calls) == 0 || len(mutating(srv)) != 0 {
				t.Fatalf("dry run json: %v %q", err, r.Out)
			}

			// An upgrade holds the host lock: exit 6 naming it, nothing sent.
			held := clitest.HoldLock(t, stateDir)
			r = run(t, cfg, false, append(fm.args, "--yes")...)
			for _, w := range []string{"held by pid", clitest.HolderCommand, "run " + clitest.HolderRunID} {
				if !strings.Contains(r.ErrOut, w) {
					t.Errorf("locked: stderr lacks %q: %s", w, r.ErrOut)
				}
			}
			if r.Code != 6 || len(mutating(srv)) != 0 {
				t.Fatalf("locked: exit %d, sent %v", r.Code, mutating(srv))
			}
			if err := held.Release(); err != nil {
				t.Fatal(err)
			}

			// On a terminal, "y" proceeds; the lock is free again afterwards.
			if r := runIn(t, cfg, true, "y\n", fm.args...); r.Code != 0 || len(mutating(srv)) == 0 {
				t.Fatalf("confirmed: exit %d, sent %v, %s", r.Code, mutating(srv), r.ErrOut)
			}
			if h, state, err := lock.Inspect(lock.HostPath(stateDir)); err != nil || state != lock.Free {
				t.Errorf("lock left behind: %v %v %v", h, state, err)
			}
		})
	}
}
