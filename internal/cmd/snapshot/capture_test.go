package snapshot

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/indexer/indexertest"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/packaging"
)

// runRoot runs args under a root with the snapshot group and returns the exit code.
func runRoot(t *testing.T, f *cli.Factory, args ...string) int {
	t.Helper()
	return cli.ExitCode(clitest.ExecRoot(f, NewCmdSnapshot(f), args...))
}

func TestRunCaptureGolden(t *testing.T) {
	fs := newFakeStack(t, fakeOpts{agents: 7})
	f, out, errOut := testFactory(t, fs)
	opts := captureOpts(f, "pre-upgrade", &seqRand{})
	if err := runCapture(context.Background(), opts); err != nil {
		t.Fatalf("capture: %v\n%s", err, errOut)
	}
	res := decodeCapture(t, out.Bytes())
	if res.ID != "20250114T102000.000000Z-010101" || filepath.Dir(res.Path) != filepath.Join(fs.StateDir, "snapshots") {
		t.Errorf("id %s path %s", res.ID, res.Path)
	}
	d, raw := readDoc(t, res.Path)
	// The health results' words belong to the health package: the golden
	// keeps their ids; the file is otherwise compared byte for byte.
	stored, err := snapshot.Marshal(d)
	if err != nil || string(stored) != string(raw) {
		t.Fatalf("the stored file is not the canonical encoding of its document: %v", err)
	}
	for i := range d.Health {
		if d.Health[i].Status == "" || d.Health[i].Summary == "" {
			t.Errorf("health result %+v", d.Health[i])
		}
		d.Health[i].Status, d.Health[i].Summary = "(status)", "(summary)"
	}
	reread, _ := readDoc(t, res.Path)
	for _, h := range reread.Health {
		if (h.ID == "indexer.api" || h.ID == "manager.api" || h.ID == "dashboard" || h.ID == "alerts.flow") && h.Status != "OK" {
			t.Errorf("health %s %s: %s", h.ID, h.Status, h.Summary)
		}
	}
	masked, err := snapshot.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "capture_fake_stack.json", normalize(t, masked, fs))

	// What the fakes say must be in the document, read by the real Source.
	if !d.Indexer.Reachable || d.Indexer.Status != "yellow" || len(d.Indexer.Indices) != 3 {
		t.Errorf("indexer: reachable %v status %s indices %d", d.Indexer.Reachable, d.Indexer.Status, len(d.Indexer.Indices))
	}
	if d.Indexer.Settings["cluster.routing.allocation.enable"] != "primaries" || d.Indexer.MaxShardsPerNode != 1200 {
		t.Errorf("settings: %v max shards %d", d.Indexer.Settings, d.Indexer.MaxShardsPerNode)
	}
	if _, ok := d.Indexer.Pipelines[pipelineID]; !ok || len(d.Indexer.Templates) != 3 {
		t.Errorf("pipelines %v templates %v", d.Indexer.Pipelines, d.Indexer.Templates)
	}
	if d.Indexer.ShardsByState["UNASSIGNED"] == 0 || d.Indexer.UnassignedByReason["INDEX_CREATED"] != 1 {
		t.Errorf("shards %v %v", d.Indexer.ShardsByState, d.Indexer.UnassignedByReason)
	}
	if len(d.Indexer.Disk) != 1 || d.Indexer.Disk[0].Node != "node-1" || d.Indexer.Disk[0].Percent != 84 {
		t.Errorf("disk %+v", d.Indexer.Disk)
	}
	m := d.Manager
	if !m.Reachable || m.Version != "4.9.0" || m.Agents.Total != 7 || m.Agents.ByStatus["active"] != 3 || m.Agents.ByVersion["Wazuh v4.9.0"] != 5 || m.Agents.ByVersion["unknown"] != 2 {
		t.Errorf("manager %+v", m)
	}
	if strings.Join(m.APIUsers, ",") != "wazuh,wazuh-wui" || m.Daemons["wazuh-analysisd"] != "running" || m.Info["type"] != "server" {
		t.Errorf("manager users %v daemons %v info %v", m.APIUsers, m.Daemons, m.Info)
	}
	if !d.Alerts.Reachable || d.Alerts.Last5m != 42 || d.Alerts.Newest != "2025-01-14T10:15:02Z" {
		t.Errorf("alerts %+v", d.Alerts)
	}
	if c := d.Components["dashboard"]; !c.Reachable || c.APIVersion != "2.11.1" {
		t.Errorf("dashboard %+v", c)
	}
	if len(d.Health) != len(goldenChecks) {
		t.Errorf("health %+v", d.Health)
	}
	// systemd and packages are unreachable here: recorded, not fatal.
	if c := d.Components["shipper"]; c.Reachable || c.Unit.ActiveState != "unknown" {
		t.Errorf("shipper %+v", c)
	}
	parts := map[string]bool{}
	for _, e := range d.Errors {
		parts[e.Part] = true
	}
	if !parts["units"] || !parts["packages"] || len(parts) != 2 {
		t.Errorf("part errors %+v", d.Errors)
	}
	// The agents were counted from streamed pages with only the fields needed.
	var ours []string
	for _, q := range fs.Manager.SeenPath("GET /agents") {
		if strings.Contains(q, "select=id%2Cstatus%2Cversion") {
			ours = append(ours, q)
		}
	}
	if len(ours) != 1 || !strings.Contains(ours[0], "limit=10000") {
		t.Errorf("GET /agents calls of the source: %v", ours)
	}
}

func TestRunCaptureTableAndPrometheus(t *testing.T) {
	fs := newFakeStack(t, fakeOpts{agents: 3})
	for _, tty := range []bool{false, true} {
		f, out, errOut := testFactory(t, fs)
		f.IO.SetTTY(false, tty, false)
		prom := filepath.Join(fs.Dir, "textfile", "siemctl.prom")
		opts := captureOpts(f, "", &seqRand{n: map[bool]byte{false: 20, true: 30}[tty]})
		opts.Output, opts.PrometheusFile = "table", prom
		if err := runCapture(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "20250114T102000.000000Z-") || !strings.Contains(lines[0], filepath.Join(fs.StateDir, "snapshots")) {
			t.Fatalf("tty=%v output:\n%s", tty, out)
		}
		want := "health WARN, 3/4 components up (down: shipper), cluster yellow, 3 indices, 15344 docs, 20.0 MiB, 3 agents, 2 part(s) not read"
		got := lines[1]
		if tty {
			if !strings.Contains(got, "\x1b[") {
				t.Errorf("no colour on a TTY: %q", got)
			}
			got = output.StripANSI(got)
		}
		if got != want {
			t.Errorf("tty=%v summary\n got %q\nwant %q", tty, got, want)
		}
		b, err := os.ReadFile(prom)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "siemctl_snapshot_") || !strings.Contains(errOut.String(), "wrote "+prom) {
			t.Errorf("prometheus file:\n%s\nstderr: %s", b, errOut)
		}
	}
	// -o prometheus prints the exposition.
	f, out, _ := testFactory(t, fs)
	opts := captureOpts(f, "", &seqRand{n: 40})
	opts.Output = "prometheus"
	if err := runCapture(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "# HELP ") {
		t.Errorf("-o prometheus:\n%s", out)
	}
}

// A stack that is entirely down still gives a snapshot and exit 0.
func TestCaptureDownStack(t *testing.T) {
	fs := writeFakeConfig(t, clitest.ClosedURL(t), clitest.ClosedURL(t), clitest.ClosedURL(t), &fakeStack{})
	f, out, errOut := testFactory(t, fs)
	code := runRoot(t, f, "snapshot", "capture", "--config", fs.Config, "-o", "json", "--timeout", "5s", "--label", "down")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	res := decodeCapture(t, out.Bytes())
	d, _ := readDoc(t, res.Path)
	if d.Summary.ComponentsUp != 0 || strings.Join(d.Summary.Down, ",") != "dashboard,indexer,manager,shipper" {
		t.Errorf("summary %+v", d.Summary)
	}
	for _, name := range []string{"indexer", "manager", "dashboard"} {
		if c := d.Components[name]; c.Reachable || !strings.Contains(c.Error, "unreachable") {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if d.Indexer.Reachable || d.Manager.Reachable || d.Alerts.Reachable {
		t.Error("a dead part recorded as reachable")
	}
	if d.Summary.Status != "CRIT" {
		t.Errorf("health verdict %s on a dead stack", d.Summary.Status)
	}
}

// No secret of the configuration reaches the snapshot, its textfile or the
// command's output, even when the stack echoes it back.
func TestCaptureNeverWritesSecrets(t *testing.T) {
	fs := newFakeStack(t, fakeOpts{agents: 2})
	echo := indexertest.Password + "/" + managerSecret
	// A cluster named after the password, an index carrying it, an error
	// quoting it, and a dashboard version with the manager's password.
	fs.Indexer.Set("GET /_cluster/health", indexertest.Route{Body: []byte(`{"cluster_name":"` + indexertest.Password + `","status":"green","number_of_nodes":1}`)})
	fs.Indexer.Set("GET /_cat/indices/*", indexertest.Route{Body: []byte(`[{"health":"green","status":"open","index":"leak-` + strings.ToLower(base64.StdEncoding.EncodeToString([]byte(managerSecret))) + `","pri":"1","rep":"0","docs.count":"1","store.size":"1"}]`)})
	fs.Indexer.Set("GET /_template", indexertest.Route{Status: http.StatusForbidden, Body: []byte(`{"error":{"type":"security_exception","reason":"no permissions for user with password ` + echo + `"},"status":403}`)})
	fs.Manager.Handle("GET /security/users", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"title":"Permission Denied","detail":"` + managerSecret + ` is not allowed","error":4000}`))
	})
	f, out, errOut := testFactory(t, fs)
	prom := filepath.Join(fs.Dir, "siemctl.prom")
	code := runRoot(t, f, "snapshot", "capture", "--config", fs.Config, "-o", "json", "--textfile", prom)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	res := decodeCapture(t, out.Bytes())
	_, raw := readDoc(t, res.Path)
	if !strings.Contains(string(raw), snapshot.Redacted) {
		t.Fatal("nothing was redacted: the fakes did not echo the secrets")
	}
	forms := fs.secrets()
	for _, s := range fs.secrets() {
		forms = append(forms, base64.StdEncoding.EncodeToString([]byte(s)))
	}
	promBytes, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for where, b := range map[string][]byte{"snapshot": raw, "textfile": promBytes, "stdout": out.Bytes(), "stderr": errOut.Bytes()} {
		clitest.NoSecret(t, where, string(b), forms...)
	}
	// show and diff print from the stored file: nothing to leak there either.
	f2, out2, _ := testFactory(t, fs)
	if code := runRoot(t, f2, "snapshot", "show", "latest", "--config", fs.Config); code != 0 {
		t.Fatalf("show exit %d", code)
	}
	clitest.NoSecret(t, "show", out2.String(), forms...)
}

func TestCaptureRetention(t *testing.T) {
	fs := newFakeStack(t, fakeOpts{agents: 1})
	rnd := &seqRand{}
	var ids []string
	for i := range 4 {
		f, out, _ := testFactory(t, fs)
		now := fixedNow.Add(time.Duration(i) * 24 * time.Hour)
		f.Now = func() time.Time { return now }
		opts := captureOpts(f, "", rnd)
		opts.Now = f.Now
		if i == 3 {
			opts.Keep = 2
		}
		if err := runCapture(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		res := decodeCapture(t, out.Bytes())
		ids = append(ids, res.ID)
		if i == 3 && strings.Join(res.Pruned, ",") != ids[0]+","+ids[1] {
			t.Errorf("pruned %v, want the two oldest of %v", res.Pruned, ids)
		}
	}
	st, _ := openStore(mustConfig(t, fs), nil)
	list, err := st.List()
	if err != nil || len(list) != 2 || list[0].ID != ids[2] || list[1].ID != ids[3] {
		t.Fatalf("after --keep 2: %v %v", list, err)
	}
}

// TestCaptureRetentionChangePolicy: --keep/--keep-days delete files, so
// the capture's prune is a change: --dry-run writes and deletes nothing and
// lists the files; while an upgrade holds the host lock the snapshot is
// saved and the prune skipped, naming the holder.
func TestCaptureRetentionChangePolicy(t *testing.T) {
	fs := newFakeStack(t, fakeOpts{agents: 1})
	rnd := &seqRand{}
	for i := range 3 {
		f, _, _ := testFactory(t, fs)
		now := fixedNow.Add(time.Duration(i) * 24 * time.Hour)
		f.Now = func() time.Time { return now }
		if err := runCapture(context.Background(), captureOpts(f, "", rnd)); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := openStore(mustConfig(t, fs), nil)
	before, _ := st.List()
	later := fixedNow.Add(3 * 24 * time.Hour)

	for _, mode := range []string{"table", "json"} {
		f, out, _ := testFactory(t, fs)
		f.Now = func() time.Time { return later }
		if code := runRoot(t, f, "snapshot", "capture", "--keep", "2", "--dry-run", "-o", mode, "--config", fs.Config); code != 0 {
			t.Fatalf("%s dry run: exit %d", mode, code)
		}
		// Two kept with the new one: the two oldest would go.
		for _, e := range before[:2] {
			if !strings.Contains(out.String(), "remove "+e.Path) {
				t.Errorf("%s dry run does not list %s:\n%s", mode, e.Path, out.String())
			}
		}
		if strings.Contains(out.String(), "remove "+before[2].Path) {
			t.Errorf("%s dry run would remove the newest kept one:\n%s", mode, out.String())
		}
		if after, _ := st.List(); len(after) != len(before) {
			t.Fatalf("%s dry run changed the store: %d → %d snapshots", mode, len(before), len(after))
		}
	}
	f, _, _ := testFactory(t, fs)
	if code := runRoot(t, f, "snapshot", "capture", "--dry-run", "-o", "prometheus", "--config", fs.Config); code != 2 {
		t.Errorf("--dry-run -o prometheus: exit %d, want 2", code)
	}

	clitest.HoldLock(t, fs.StateDir)
	f, out, errOut := testFactory(t, fs)
	f.Now = func() time.Time { return later }
	opts := captureOpts(f, "", rnd)
	opts.Keep = 1
	if err := runCapture(context.Background(), opts); err != nil {
		t.Fatalf("capture under an upgrade's lock: %v", err)
	}
	if res := decodeCapture(t, out.Bytes()); len(res.Pruned) != 0 {
		t.Errorf("pruned %v while the lock was held", res.Pruned)
	}
	if after, _ := st.List(); len(after) != len(before)+1 {
		t.Errorf("under the lock: %d snapshots, want %d (saved, nothing pruned)", len(after), len(before)+1)
	}
	if !strings.Contains(errOut.String(), "pruning skipped") || !strings.Contains(errOut.String(), clitest.HolderCommand) {
		t.Errorf("stderr does not say the prune was skipped for the holder: %q", errOut.String())
	}
}

func TestNewCmdCapture(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    CaptureOptions
		wantErr string
	}{
		{"defaults", nil, CaptureOptions{Output: "table", Timeout: DefaultCaptureTimeout}, ""},
		{"all flags", []string{"--label", "pre-upgrade", "--keep", "5", "--keep-days", "7", "--textfile", "/x/s.prom", "-o", "json", "--timeout", "3s"},
			CaptureOptions{Output: "json", Timeout: 3 * time.Second, Label: "pre-upgrade", Keep: 5, KeepDays: 7, PrometheusFile: "/x/s.prom"}, ""},
		{"prometheus output", []string{"-o", "prometheus"}, CaptureOptions{Output: "prometheus", Timeout: DefaultCaptureTimeout}, ""},
		{"bad label", []string{"--label", "no spaces"}, CaptureOptions{}, "--label: invalid snapshot label"},
		{"negative keep", []string{"--keep", "-1"}, CaptureOptions{}, "--keep and --keep-days must be"},
		{"not a prom file", []string{"--textfile", "/x/s.txt"}, CaptureOptions{}, "reads only *.prom files"},
		{"bad output", []string{"-o", "yaml"}, CaptureOptions{}, "-o yaml is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clitest.Parse(NewCmdCapture, tt.args...)
			checkFlagErr(t, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			w := tt.want
			if got.Output != w.Output || got.Timeout != w.Timeout || got.Label != w.Label || got.Keep != w.Keep ||
				got.KeepDays != w.KeepDays || got.PrometheusFile != w.PrometheusFile || got.Live == nil || got.IO == nil {
				t.Errorf("options %+v, want %+v", got, w)
			}
		})
	}
}

func checkFlagErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) || cli.ExitCode(err) != cli.ExitUsage {
		t.Fatalf("error %v (exit %d), want usage error containing %q", err, cli.ExitCode(err), want)
	}
}

// The command line of the shipped systemd service parses, with the options
// the timer relies on.
func TestPackagedServiceCommandLine(t *testing.T) {
	unit, err := packaging.Files.ReadFile("siemctl-snapshot.service")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(unit), "\n") {
		if rest, ok := strings.CutPrefix(l, "ExecStart="); ok {
			line = rest
		}
	}
	args := strings.Fields(line)
	if len(args) < 3 || args[1] != "snapshot" || args[2] != "capture" {
		t.Fatalf("ExecStart=%s", line)
	}
	got, err := clitest.Parse(NewCmdCapture, args[3:]...)
	if err != nil {
		t.Fatalf("ExecStart=%s: %v", line, err)
	}
	if got.Label != "timer" || got.KeepDays <= 0 || !strings.HasSuffix(got.PrometheusFile, ".prom") || got.Timeout != DefaultCaptureTimeout {
		t.Errorf("service options %+v", got)
	}
}
