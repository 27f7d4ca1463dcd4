package alerts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/cmd/alerts"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/ops/cleanup"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/output"
)

const prefix = "siem-alerts-4.x-"

var now = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

// newStack returns a client set whose indexer is the fake and whose state and
// install dirs are temp dirs.
func newStack(t *testing.T, srv *indexertest.Server) *factory.Clients {
	t.Helper()
	ix := srv.Client(t)
	d := t.TempDir()
	return &factory.Clients{Config: &config.Config{StateDir: filepath.Join(d, "state"),
		Indexer: config.Indexer{AlertsIndexPrefix: prefix},
		Manager: config.Manager{InstallDir: filepath.Join(d, "siem"), Syslog: "udp://127.0.0.1:514"}}, Indexer: clientset.Of(ix)}
}

// lastBody decodes the body of the last request key ("POST /path") the fake
// indexer got into v, and returns the request.
func lastBody(t *testing.T, srv *indexertest.Server, key string, v any) indexertest.Request {
	t.Helper()
	req, ok := srv.Last(key)
	if !ok {
		t.Fatalf("no %s", key)
	}
	if err := json.Unmarshal(req.Body, v); err != nil {
		t.Fatalf("%s body: %v\n%s", key, err, req.Body)
	}
	return req
}

// alertsFile is the manager's alerts file under the install dir.
func alertsFile(s *factory.Clients) string {
	return filepath.Join(s.Config.Manager.InstallDir, "logs", "alerts", "alerts.json")
}

const searchBody = `{"hits":{"total":{"value":3,"relation":"eq"},"hits":[
 {"_index":"siem-alerts-4.x-2025.03.10","_id":"id3","_source":{"timestamp":"2025-03-10T11:59:01.412+0000","rule":{"level":12,"description":"High: brute force","id":"100002"},"agent":{"id":"001","name":"web-01"}},"sort":[1741607941412,"id3"]},
 {"_index":"siem-alerts-4.x-2025.03.10","_id":"id2","_source":{"timestamp":"2025-03-10T11:58:00.000+0000","rule":{"level":5,"description":"sshd: Attempt to login using a non-existent user","id":"5710"},"agent":{"id":"000","name":"siem01"},"full_log":"Failed password for invalid user x"},"sort":[1741607880000,"id2"]},
 {"_index":"siem-alerts-4.x-2025.03.10","_id":"id1","_source":{"weird":true},"sort":[1741607800000,"id1"]}]}}`

func TestNewCmdSearch(t *testing.T) {
	tests := []struct {
		args  []string
		query string
		since time.Duration
		n     int
		err   string
	}{
		{[]string{}, "", 15 * time.Minute, 20, ""},
		{[]string{"-q", `rule.id:"5710" AND data.srcip:[192.0.2.0 TO 192.0.2.255]`, "--since", "12h", "-n", "5"}, `rule.id:"5710" AND data.srcip:[192.0.2.0 TO 192.0.2.255]`, 12 * time.Hour, 5, ""},
		{[]string{"--since", "15"}, "", 0, 0, `invalid duration "15"`},
		{[]string{"--since", "1.5h"}, "", 90 * time.Minute, 20, ""}, // the one duration syntax of every flag
		{[]string{"--since", "1d12h"}, "", 36 * time.Hour, 20, ""},
		{[]string{"--since", "soon"}, "", 0, 0, "invalid duration"},
		{[]string{"-n", "0"}, "", 0, 0, "-n 0: use 1 to 10000"},
		{[]string{"-n", "10001"}, "", 0, 0, "use 1 to 10000"},
		{[]string{"extra"}, "", 0, 0, "unknown command"},
	}
	for _, tt := range tests {
		got, err := clitest.Parse(alerts.NewCmdSearch, tt.args...)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: %v, want %q", tt.args, err, tt.err)
			}
			if code := cli.ExitCode(err); err != nil && code != 2 && !strings.Contains(err.Error(), "unknown command") {
				t.Errorf("%v: exit %d, want 2", tt.args, code)
			}
			continue
		}
		if err != nil || got.Query != tt.query || got.Since != tt.since || got.Limit != tt.n {
			t.Errorf("%v: %v %+v", tt.args, err, got)
		}
	}
}

func TestRunSearch(t *testing.T) {
	for _, mode := range []struct {
		name   string
		output string
		tty    bool
	}{{"table", "table", false}, {"table-tty", "table", true}, {"json", "json", false}} {
		t.Run(mode.name, func(t *testing.T) {
			srv := indexertest.NewServer(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Body: []byte(searchBody)}})
			io, _, out, errOut := output.Test()
			io.SetTTY(false, mode.tty, false)
			q := `full_log:"a \"quoted\" [bracket] /slash/" OR rule.id:(5710 OR 5716)`
			err := runSearch(t, newStack(t, srv), &alerts.SearchOptions{Common: alerts.Common{IO: io, Now: clock, Output: mode.output, Timeout: 5 * time.Second},
				Query: q, Since: 15 * time.Minute, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "search-"+mode.name, out.Bytes())
			var body struct {
				Size  int `json:"size"`
				Query struct {
					Bool struct {
						Filter []map[string]map[string]any `json:"filter"`
					} `json:"bool"`
				} `json:"query"`
				Sort []map[string]map[string]any `json:"sort"`
			}
			req := lastBody(t, srv, "POST /siem-alerts-4.x-*/_search", &body)
			if got := body.Query.Bool.Filter[0]["query_string"]["query"]; got != q {
				t.Errorf("query in body %q, want it unchanged %q", got, q)
			}
			if gte := body.Query.Bool.Filter[1]["range"]["timestamp"].(map[string]any)["gte"]; gte != float64(now.Add(-15*time.Minute).UnixMilli()) {
				t.Errorf("since %v", gte)
			}
			if body.Size != 3 || body.Sort[0]["timestamp"]["order"] != "desc" {
				t.Errorf("size %d sort %v", body.Size, body.Sort)
			}
			if len(req.Query) != 2 || strings.Contains(fmt.Sprint(req.Query), "quoted") {
				t.Errorf("the query leaked into the URL: %v", req.Query)
			}
			if mode.output == "table" && !strings.Contains(errOut.String(), "3 of 3 alerts since 2025-03-10T11:45:00Z") {
				t.Errorf("stderr %q", errOut.String())
			}
		})
	}
}

// runSearch runs the command's RunE through the public constructor.
func runSearch(t *testing.T, st *factory.Clients, o *alerts.SearchOptions) error {
	t.Helper()
	f := clitest.Factory(o.IO, st)
	f.Global.Output, f.Global.Timeout = o.Output, o.Timeout
	f.Now = o.Now
	args := []string{"--since", fmt.Sprintf("%dm", int(o.Since.Minutes())), "-n", fmt.Sprint(o.Limit)}
	if o.Query != "" {
		args = append(args, "-q", o.Query)
	}
	return clitest.Exec(alerts.NewCmdSearch(f, nil), args...)
}

// testFactory returns a Factory wired to the fake stack.
func testFactory(t *testing.T, s *factory.Clients, outputFmt string, tty bool) (*cli.Factory, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	io, in, out, errOut := output.Test()
	io.SetTTY(tty, tty, tty)
	f := clitest.Factory(io, s)
	f.Global.Output = outputFmt
	f.Now = clock
	return f, in, out, errOut
}

func TestSearchBadQuery(t *testing.T) {
	srv := indexertest.NewServer(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Status: 400,
		Body: []byte(`{"error":{"root_cause":[{"type":"query_shard_exception","reason":"Failed to parse query [rule.id:[5710]"}],"type":"search_phase_execution_exception","reason":"all shards failed"},"status":400}`)}})
	f, _, out, _ := testFactory(t, newStack(t, srv), "table", false)
	err := clitest.Exec(alerts.NewCmdSearch(f, nil), "-q", "rule.id:[5710")
	var fe *cli.FlagError
	if !errors.As(err, &fe) || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), `the indexer rejected the query "rule.id:[5710"`) || !strings.Contains(err.Error(), "escape special characters") {
		t.Errorf("%v", err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q", out.String())
	}
}

func TestCount(t *testing.T) {
	for _, mode := range []string{"table", "json"} {
		srv := indexertest.NewServer(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_count": {Body: []byte(`{"count":42}`)}})
		f, _, out, _ := testFactory(t, newStack(t, srv), mode, false)
		if err := clitest.Exec(alerts.NewCmdCount(f, nil), "--since", "5m", "-q", `agent.name:"web-01"`); err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, "count-"+mode, out.Bytes())
		req, _ := srv.Last("POST /siem-alerts-4.x-*/_count")
		if !bytes.Contains(req.Body, []byte(`"query":"agent.name:\"web-01\""`)) {
			t.Errorf("body %s", req.Body)
		}
	}
	for _, bad := range []string{"5", "5x", "-5m", "0m"} {
		got, err := clitest.Parse(alerts.NewCmdCount, "--since", bad)
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "invalid duration") && !strings.Contains(err.Error(), "more than zero") || got != nil {
			t.Errorf("--since %s: %v (ran: %v)", bad, err, got != nil)
		}
	}
}

func TestTailOnce(t *testing.T) {
	srv := indexertest.NewServer(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Body: []byte(searchBody)}})
	for _, mode := range []string{"table", "json"} {
		f, _, out, _ := testFactory(t, newStack(t, srv), mode, false)
		if err := clitest.Exec(alerts.NewCmdTail(f, nil), "--once", "-n", "3"); err != nil {
			t.Fatal(err)
		}
		// The start batch is printed oldest first; the poll finds the same
		// three documents again and prints nothing twice.
		golden.Assert(t, "tail-once-"+mode, out.Bytes())
	}
	var sorts []string
	for _, r := range srv.Requests() {
		var b struct {
			Sort        []map[string]map[string]any `json:"sort"`
			SearchAfter []any                       `json:"search_after"`
		}
		_ = json.Unmarshal(r.Body, &b)
		sorts = append(sorts, fmt.Sprint(b.Sort[0]["timestamp"]["order"], " ", b.Sort[1]["_id"]["order"]))
	}
	// Two runs (table, json): each a start (newest first) and one poll (oldest first).
	if strings.Join(sorts, ",") != "desc desc,asc asc,desc desc,asc asc" {
		t.Errorf("sorts %v", sorts)
	}
}

func TestTailInterrupted(t *testing.T) {
	srv := indexertest.NewServer(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Body: []byte(`{"hits":{"total":{"value":0,"relation":"eq"},"hits":[]}}`)}})
	f, _, _, errOut := testFactory(t, newStack(t, srv), "table", false)
	ctx, cancel := context.WithCancel(context.Background())
	polls := 0
	cmd := alerts.NewCmdTail(f, func(ctx context.Context, o *alerts.TailOptions) error {
		o.Wait = func(ctx context.Context, d time.Duration) error {
			polls++
			if polls == 3 {
				cancel() // Ctrl-C
				return ctx.Err()
			}
			return nil
		}
		return alerts.RunTail(ctx, o)
	})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--interval", "1s"})
	err := cmd.ExecuteContext(ctx)
	if cli.ExitCode(err) != 130 || errOut.Len() != 0 {
		t.Errorf("%v (exit %d), stderr %q", err, cli.ExitCode(err), errOut.String())
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d searches, want start + 2 polls", n)
	}
}

func TestDurationFlagErrorsAreUsage(t *testing.T) {
	// Duration flags take the one syntax; a bad value is a usage error (exit 2) naming the value.
	for _, args := range [][]string{{"alerts", "tail", "--interval", "0s"}, {"alerts", "probe", "--wait", "1 minute"}, {"--timeout", "0s", "alerts", "count"}} {
		r := clitest.Main(context.Background(), clitest.Group(alerts.NewCmdAlerts), false, "", args...)
		if r.Code != cli.ExitUsage || !strings.Contains(r.ErrOut, "invalid duration") && !strings.Contains(r.ErrOut, "must be positive") {
			t.Errorf("%v: exit %d %s", args, r.Code, r.ErrOut)
		}
	}
}

func TestNewCmdTailFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--overlap", "2"}, "--overlap: invalid duration"},
		{[]string{"-n", "-1"}, "-n -1"},
	} {
		if _, err := clitest.Parse(alerts.NewCmdTail, tt.args...); cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v", tt.args, err)
		}
	}
}

// fakeConn stands in for the syslog socket; the test's "manager" writes
// the alert when the frame arrives.
type fakeConn struct {
	net.Conn
	write func(string)
}

func (c *fakeConn) Write(b []byte) (int, error)      { c.write(string(b)); return len(b), nil }
func (c *fakeConn) Close() error                     { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error { return nil }

func TestProbe(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		manager bool // the manager writes the alert
		indexed bool // the shipper indexes it
		code    int
		broken  string
	}{
		{"arrives", "table", true, true, 0, ""},
		{"arrives-json", "json", true, true, 0, ""},
		{"shipper-stalled", "table", true, false, 3, "broken at shipper"},
		{"manager-silent-json", "json", false, false, 3, "broken at manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			polls := 0
			srv := indexertest.NewServer(t, map[string]indexertest.Route{"POST /siem-alerts-4.x-*/_search": {Handler: func(w http.ResponseWriter, r *http.Request) {
				polls++
				if tt.indexed && polls >= 2 {
					fmt.Fprint(w, `{"hits":{"total":{"value":1,"relation":"eq"},"hits":[{"_index":"siem-alerts-4.x-2025.03.10","_id":"p","_source":{"rule":{"id":"5710","level":5}}}]}}`)
					return
				}
				fmt.Fprint(w, `{"hits":{"total":{"value":0,"relation":"eq"},"hits":[]}}`)
			}}})
			st := newStack(t, srv)
			alertsFile := alertsFile(st)
			if err := os.MkdirAll(filepath.Dir(alertsFile), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(alertsFile, nil, 0o640); err != nil {
				t.Fatal(err)
			}
			f, _, out, errOut := testFactory(t, st, tt.mode, false)
			cur := now
			var frame string
			cmd := alerts.NewCmdProbe(f, func(ctx context.Context, o *alerts.ProbeOptions) error {
				o.Tune = func(po *probe.Options) {
					po.Now = func() time.Time { return cur }
					po.Wait = func(_ context.Context, d time.Duration) error { cur = cur.Add(d); return nil }
					po.Hostname = "siem01"
					po.Rand = bytes.NewReader([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
					po.Dial = func(context.Context, string, string) (net.Conn, error) {
						return &fakeConn{write: func(s string) {
							frame = s
							if tt.manager {
								line := `{"rule":{"level":5,"description":"sshd: Attempt to login using a non-existent user","id":"5710"},"data":{"srcuser":"siemctl-probe-010203040506"}}` + "\n"
								_ = os.WriteFile(alertsFile, []byte(line), 0o640)
							}
						}}, nil
					}
				}
				return alerts.RunProbe(ctx, o)
			})
			err := clitest.Exec(cmd, "--wait", "5s", "--interval", "250ms")
			if code := cli.ExitCode(err); code != tt.code {
				t.Errorf("exit %d (%v), want %d", code, err, tt.code)
			}
			if !strings.Contains(frame, "sshd: Failed password for invalid user siemctl-probe-010203040506 from 192.0.2.8 port ") {
				t.Errorf("frame %q", frame)
			}
			golden.Assert(t, "probe-"+tt.name, []byte(strings.ReplaceAll(out.String(), st.Config.Manager.InstallDir, "INSTALL")))
			if tt.broken != "" && !strings.Contains(errOut.String(), tt.broken) {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.broken)
			}
		})
	}
}

func TestProbeBadSyslog(t *testing.T) {
	srv := indexertest.NewServer(t, nil)
	st := newStack(t, srv)
	st.Config.Manager.Syslog = "http://127.0.0.1:514"
	f, _, _, _ := testFactory(t, st, "table", false)
	cmd := alerts.NewCmdProbe(f, nil)
	if err := clitest.Exec(cmd); cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "udp:// or tcp://") {
		t.Errorf("%v", err)
	}
	st.Config.Manager.Syslog, st.Config.Manager.InstallDir = "", ""
	if err := cmd.Execute(); cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "set manager.syslog") {
		t.Errorf("%v", err)
	}
	// No syslog but an install dir: the event goes to analysisd's queue
	// socket; a missing socket is broken at the manager, naming the fix.
	st.Config.Manager.InstallDir = t.TempDir()
	if err := cmd.Execute(); cli.ExitCode(err) != 3 {
		t.Errorf("missing queue socket: %v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Error("the indexer was contacted")
	}
}

// catIndices returns a _cat/indices answer for the dates (docs = i+1, 1 MiB each).
func catIndices(names ...string) []byte {
	var rows []string
	for i, n := range names {
		rows = append(rows, catRow(i, n))
	}
	return []byte("[" + strings.Join(rows, ",") + "]")
}

func catRow(i int, n string) string {
	return fmt.Sprintf(`{"health":"green","status":"open","index":%q,"uuid":"uuid-%d","pri":"1","rep":"0","docs.count":"%d","store.size":"1048576","creation.date":"1736812800123"}`, n, i, i+1)
}

var cleanupIndices = []string{prefix + "2024.11.01", prefix + "2024.11.02", prefix + "2024.12.31", prefix + "2025.03.10", prefix + "2025.03.11", prefix + "2024.11.03-restored"}

func cleanupServer(t *testing.T) *indexertest.Server {
	srv := indexertest.NewServer(t, map[string]indexertest.Route{
		"GET /_cat/indices/siem-alerts-4.x-*": {Body: catIndices(cleanupIndices...)},
		"GET /_cat/allocation":                {Body: []byte(`[{"shards":"6","disk.indices":"6291456","disk.used":"88000000","disk.avail":"12000000","disk.total":"100000000","disk.percent":"88","host":"127.0.0.1","ip":"127.0.0.1","node":"node-1"}]`)},
	})
	for i, n := range cleanupIndices {
		srv.Set("GET /_cat/indices/"+n, indexertest.Route{Body: []byte("[" + catRow(i, n) + "]")})
	}
	return srv
}

func TestCleanupPlan(t *testing.T) {
	tests := []struct {
		name string
		args []string
		mode string
	}{
		{"older-than", []string{"--older-than", "60d"}, "table"},
		{"older-than-json", []string{"--older-than", "60d"}, "json"},
		{"disk-above", []string{"--disk-above", "87"}, "table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := cleanupServer(t)
			st := newStack(t, srv)
			f, _, out, errOut := testFactory(t, st, tt.mode, false)
			if err := clitest.Exec(alerts.NewCmdCleanup(f, nil), tt.args...); err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(out.String(), st.Config.StateDir, "STATE")
			got = strings.ReplaceAll(got, srv.URL, "INDEXER")
			path := cleanup.DefaultPlanPath(st.Config.StateDir, now)
			key, err := cleanup.Key(st.Config.StateDir)
			if err != nil {
				t.Fatal(err)
			}
			p, err := cleanup.Load(path, key)
			if err != nil {
				t.Fatalf("plan file: %v", err)
			}
			got = strings.ReplaceAll(got, p.Checksum, "CHECKSUM") // covers the fake's random URL
			got = strings.ReplaceAll(got, p.Signature, "SIGNATURE")
			golden.Assert(t, "cleanup-plan-"+tt.name, []byte(got))
			if len(p.Indices) == 0 || tt.mode == "table" && !strings.Contains(errOut.String(), "apply it with: siemctl alerts cleanup --apply "+path) {
				t.Errorf("plan %+v stderr %q", p, errOut.String())
			}
			for _, r := range srv.Requests() {
				if r.Method != http.MethodGet {
					t.Errorf("planning sent %s %s", r.Method, r.Path)
				}
			}
		})
	}
}

func TestCleanupApply(t *testing.T) {
	srv := cleanupServer(t)
	st := newStack(t, srv)
	var deleted []string
	srv.Set("DELETE /siem-alerts-4.x-2024.11.01", indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		deleted = append(deleted, r.URL.Path)
		fmt.Fprint(w, `{"acknowledged":true}`)
	}})
	srv.Set("DELETE /siem-alerts-4.x-2024.11.02", indexertest.Route{Handler: func(w http.ResponseWriter, r *http.Request) {
		deleted = append(deleted, r.URL.Path+"?"+r.URL.RawQuery)
		fmt.Fprint(w, `{"acknowledged":true}`)
	}})
	planFile := filepath.Join(t.TempDir(), "plan.json")
	f, _, _, _ := testFactory(t, st, "table", false)
	if err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--older-than", "90d", "--plan-file", planFile); err != nil {
		t.Fatal(err)
	}

	t.Run("no terminal and no --yes", func(t *testing.T) {
		f, _, _, _ := testFactory(t, st, "table", false)
		err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--apply", planFile)
		if cli.ExitCode(err) != 2 || !errors.Is(err, output.ErrNoTTY) || len(deleted) != 0 {
			t.Errorf("%v deleted=%v", err, deleted)
		}
	})
	t.Run("missing plan file: usage error naming the fix", func(t *testing.T) {
		f, _, _, _ := testFactory(t, st, "table", false)
		f.Global.Yes = true
		err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--apply", filepath.Join(t.TempDir(), "nope.json"))
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "no such plan file; make one with --older-than") || len(deleted) != 0 {
			t.Errorf("%v (exit %d)", err, cli.ExitCode(err))
		}
	})
	t.Run("dry run: each delete request, nothing deleted, no question", func(t *testing.T) {
		for _, mode := range []string{"table", "json"} {
			f, _, out, _ := testFactory(t, st, mode, false)
			if err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--apply", planFile, "--dry-run"); err != nil || len(deleted) != 0 {
				t.Fatalf("%s: %v deleted=%v", mode, err, deleted)
			}
			for _, w := range []string{"DELETE /siem-alerts-4.x-2024.11.01?allow_no_indices=false&expand_wildcards=none&ignore_unavailable=false", "DELETE /siem-alerts-4.x-2024.11.02?"} {
				if !strings.Contains(out.String(), w) {
					t.Errorf("%s: stdout lacks %q:\n%s", mode, w, out.String())
				}
			}
		}
		for _, r := range srv.Requests() {
			if r.Method == http.MethodDelete {
				t.Errorf("dry run sent %s %s", r.Method, r.Path)
			}
		}
	})
	t.Run("an upgrade holds the host lock: exit 6 naming it", func(t *testing.T) {
		clitest.HoldLock(t, st.Config.StateDir)
		f, _, _, _ := testFactory(t, st, "table", false)
		f.Global.Yes = true
		err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--apply", planFile)
		if cli.ExitCode(err) != 6 || !strings.Contains(err.Error(), clitest.HolderCommand) || !strings.Contains(err.Error(), "run "+clitest.HolderRunID) || len(deleted) != 0 {
			t.Errorf("%v (exit %d) deleted=%v", err, cli.ExitCode(err), deleted)
		}
	})
	t.Run("declined at the prompt", func(t *testing.T) {
		f, in, _, errOut := testFactory(t, st, "table", true)
		in.WriteString("n\n")
		err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--apply", planFile)
		if !errors.Is(err, output.ErrDeclined) || len(deleted) != 0 || !strings.Contains(errOut.String(), "delete 2 alerts indices (3 documents, 2.0 MiB)") {
			t.Errorf("%v deleted=%v stderr=%q", err, deleted, errOut.String())
		}
	})
	t.Run("tampered", func(t *testing.T) {
		b, _ := os.ReadFile(planFile)
		bad := filepath.Join(t.TempDir(), "plan.json")
		os.WriteFile(bad, bytes.Replace(b, []byte(prefix+"2024.11.02"), []byte(prefix+"2025.03.10"), 1), 0o600)
		f, _, _, _ := testFactory(t, st, "table", false)
		f.Global.Yes = true
		err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--apply", bad)
		if cli.ExitCode(err) != 3 || !strings.Contains(err.Error(), "checksum mismatch") || len(deleted) != 0 {
			t.Errorf("%v deleted=%v", err, deleted)
		}
	})
	t.Run("applied with --yes", func(t *testing.T) {
		f, _, out, errOut := testFactory(t, st, "table", false)
		f.Global.Yes = true
		if err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--apply", planFile); err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, "cleanup-apply", out.Bytes())
		want := []string{"/siem-alerts-4.x-2024.11.01", "/siem-alerts-4.x-2024.11.02?allow_no_indices=false&expand_wildcards=none&ignore_unavailable=false"}
		if strings.Join(deleted, " ") != strings.Join(want, " ") {
			t.Errorf("deleted %v, want %v", deleted, want)
		}
		if !strings.Contains(errOut.String(), "deleted 2 of 2 planned indices") {
			t.Errorf("stderr %q", errOut.String())
		}
	})
	t.Run("stale: index re-created since the plan", func(t *testing.T) {
		deleted = nil
		srv.Set("GET /_cat/indices/siem-alerts-4.x-*", indexertest.Route{Body: bytes.Replace(catIndices(cleanupIndices...), []byte("uuid-1"), []byte("uuid-new"), 1)})
		f, _, out, _ := testFactory(t, st, "table", false)
		f.Global.Yes = true
		err := clitest.Exec(alerts.NewCmdCleanup(f, nil), "--apply", planFile)
		if cli.ExitCode(err) != 3 || !strings.Contains(err.Error(), "index re-created") || len(deleted) != 0 {
			t.Errorf("%v deleted=%v", err, deleted)
		}
		if !strings.Contains(out.String(), "changed") {
			t.Errorf("stdout %q", out.String())
		}
	})
}

func TestNewCmdCleanupFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "give --older-than AGE"},
		{[]string{"--older-than", "90"}, `--older-than: invalid duration "90"`},
		{[]string{"--older-than", "ninety days"}, "invalid duration"},
		{[]string{"--older-than", "0d"}, "more than zero"},
		{[]string{"--disk-above", "0"}, "--disk-above 0: use a percentage from 1 to 99"},
		{[]string{"--disk-above", "100"}, "use a percentage from 1 to 99"},
		{[]string{"--disk-above", "85%"}, "invalid argument"},
		{[]string{"--older-than", "90d", "--disk-above", "85"}, "not both"},
		{[]string{"--apply", "p.json", "--older-than", "90d"}, "do not combine it with --older-than"},
		{[]string{"--apply", "p.json", "--plan-file", "x.json"}, "do not combine it with --apply"},
		{[]string{"--apply", ""}, "--apply needs the plan file"},
		{[]string{"--older-than", "90d", "--dry-run"}, "--dry-run goes with --apply PLAN"},
	}
	for _, tt := range tests {
		got, err := clitest.Parse(alerts.NewCmdCleanup, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || got != nil {
			t.Errorf("%v: %v (ran: %v), want %q", tt.args, err, got != nil, tt.want)
		}
	}
	// Parsed options.
	if got, err := clitest.Parse(alerts.NewCmdCleanup, "--older-than", "12h", "--plan-file", "/tmp/p.json"); err != nil || got.Criteria.OlderThan != 12*time.Hour || got.Criteria.OlderThanText != "12h" || got.PlanFile != "/tmp/p.json" {
		t.Errorf("%v %+v", err, got)
	}
}

// TestProbeChangePolicy: the probe writes an event, so it is a change:
// --dry-run sends nothing and says what it would send; an upgrade's host
// lock stops it (exit 6) before anything is sent.
func TestProbeChangePolicy(t *testing.T) {
	srv := indexertest.NewServer(t, nil)
	st := newStack(t, srv)
	st.Config.Manager.Syslog = "udp://127.0.0.1:9"
	sent := 0
	tune := func(ctx context.Context, o *alerts.ProbeOptions) error {
		o.Tune = func(po *probe.Options) {
			po.Dial = func(context.Context, string, string) (net.Conn, error) {
				sent++
				return &fakeConn{write: func(string) {}}, nil
			}
		}
		return alerts.RunProbe(ctx, o)
	}
	for _, mode := range []string{"table", "json"} {
		f, _, out, _ := testFactory(t, st, mode, false)
		if err := clitest.Exec(alerts.NewCmdProbe(f, tune), "--dry-run"); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if sent != 0 || len(srv.Requests()) != 0 {
			t.Fatalf("%s: a dry run sent %d line(s), %d request(s)", mode, sent, len(srv.Requests()))
		}
		for _, w := range []string{"to udp://127.0.0.1:9", "/siem-alerts-4.x-*/_search"} {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: dry run output lacks %q:\n%s", mode, w, out.String())
			}
		}
		if mode == "json" && !strings.Contains(out.String(), `"dry_run": true`) {
			t.Errorf("json dry run: %s", out.String())
		}
	}
	clitest.HoldLock(t, st.Config.StateDir)
	f, _, _, _ := testFactory(t, st, "table", false)
	err := clitest.Exec(alerts.NewCmdProbe(f, tune), "--wait", "1s")
	if cli.ExitCode(err) != 6 || !strings.Contains(err.Error(), clitest.HolderCommand) || sent != 0 {
		t.Errorf("probe under an upgrade's lock: %v (exit %d), %d line(s) sent", err, cli.ExitCode(err), sent)
	}
}
