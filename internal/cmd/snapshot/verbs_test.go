package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
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
)

// twoSnapshots captures the fake stack, then drops the closed alerts index
// and captures again an hour later: ids[0] (label pre) and ids[1] (post).
func twoSnapshots(t *testing.T) (*fakeStack, []string) {
	t.Helper()
	fs := newFakeStack(t, fakeOpts{agents: 5})
	rnd := &seqRand{}
	var ids []string
	for i, label := range []string{"pre", "post"} {
		if i == 1 {
			fs.Indexer.Set("GET /_cat/indices/*", indexertest.Route{Body: []byte(`[
  {"health":"green","status":"open","index":"siem-alerts-4.x-2025.01.14","pri":"3","rep":"0","docs.count":"15400","store.size":"20971999"},
  {"health":"yellow","status":"open","index":".opendistro-job-scheduler-lock","pri":"1","rep":"1","docs.count":"2","store.size":"10342"}]`)})
		}
		f, out, errOut := testFactory(t, fs)
		now := fixedNow.Add(time.Duration(i) * time.Hour)
		opts := captureOpts(f, label, rnd)
		opts.Now = func() time.Time { return now }
		if err := runCapture(context.Background(), opts); err != nil {
			t.Fatalf("capture %s: %v\n%s", label, err, errOut)
		}
		ids = append(ids, decodeCapture(t, out.Bytes()).ID)
	}
	return fs, ids
}

func TestListShowDiffPrune(t *testing.T) {
	fs, ids := twoSnapshots(t)
	run := func(tty bool, args ...string) (string, string, int) {
		f, out, errOut := testFactory(t, fs)
		f.IO.SetTTY(false, tty, false)
		code := runRoot(t, f, append(append([]string{"snapshot"}, args...), "--config", fs.Config)...)
		return out.String(), errOut.String(), code
	}

	out, _, code := run(false, "list")
	if code != 0 {
		t.Fatalf("list exit %d", code)
	}
	golden.Assert(t, "list.txt", []byte(out))
	out, _, _ = run(true, "list")
	if !strings.Contains(out, "\x1b[") || !strings.Contains(output.StripANSI(out), "ID  ") {
		t.Errorf("list on a TTY is not aligned and coloured:\n%s", out)
	}
	out, _, _ = run(false, "list", "-o", "json")
	var entries []snapshot.Entry
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 2 || entries[0].ID != ids[0] || entries[1].Label != "post" {
		t.Fatalf("list -o json: %v\n%s", err, out)
	}

	out, _, code = run(false, "show", "label:pre")
	if code != 0 {
		t.Fatalf("show exit %d", code)
	}
	golden.Assert(t, "show_pre.txt", normalize(t, []byte(out), fs))
	out, _, _ = run(false, "show", ids[1][:17], "-o", "json")
	if d, err := snapshot.Unmarshal([]byte(out)); err != nil || d.ID != ids[1] {
		t.Errorf("show by prefix -o json: %v", err)
	}

	// The closed index disappeared: critical, exit 3, ranked first.
	out, _, code = run(false, "diff", "previous", "latest")
	if code != cli.ExitNoGo {
		t.Errorf("diff exit %d, want 3\n%s", code, out)
	}
	golden.Assert(t, "diff.txt", []byte(out))
	out, _, code = run(false, "diff", "label:pre", "label:post", "-o", "json")
	var rep snapshot.DiffJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 3 || !rep.Critical || rep.Changes[0].Key != "siem-alerts-4.x-2024.10.01" {
		t.Errorf("diff -o json: exit %d %v\n%s", code, err, out)
	}
	// Expected retention cleanup: no longer critical.
	out, _, code = run(false, "diff", ids[0], ids[1], "--ignore-index", "siem-alerts-4.x-2024.*", "--expect", "manager=4.10.0-1")
	if code != 0 || !strings.Contains(out, "index removed as expected") || !strings.Contains(out, "expected 4.10.0-1") {
		t.Errorf("diff --ignore-index: exit %d\n%s", code, out)
	}

	// Unknown references are usage errors naming the fix.
	for _, args := range [][]string{{"show", "nope"}, {"diff", "latest", "label:nope"}, {"show", "2025"}} {
		_, errOut, code := run(false, args...)
		if code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}

	// prune asks (--yes off a terminal), has a dry run, takes the host lock;
	// none of these removes a file.
	snapDir := func() []string {
		f, _, _ := testFactory(t, fs)
		cfg, err := f.Config()
		if err != nil {
			t.Fatal(err)
		}
		m, _ := filepath.Glob(filepath.Join(cfg.StateDir, "snapshots", "*.json"))
		return m
	}
	files := snapDir()
	if _, errOut, code := run(false, "prune", "--keep", "1"); code != cli.ExitUsage || len(snapDir()) != len(files) {
		t.Errorf("prune without --yes: exit %d %s", code, errOut)
	}
	out, errOut, code := run(false, "prune", "--keep", "1", "--dry-run")
	if code != 0 || len(snapDir()) != len(files) || !strings.HasPrefix(out, "remove "+files[0]+"\n") || strings.Contains(out, files[1]) {
		t.Errorf("prune --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	{
		held := clitest.HoldLock(t, fs.StateDir)
		_, errOut, code := run(false, "prune", "--keep", "1", "--yes")
		_ = held.Release()
		if code != cli.ExitLocked || len(snapDir()) != len(files) {
			t.Errorf("prune under the lock: exit %d %s", code, errOut)
		}
	}

	// prune keeps the newest.
	out, errOut, code = run(false, "prune", "--keep", "1", "-o", "json", "--yes")
	var pr pruneResult
	if err := json.Unmarshal([]byte(out), &pr); err != nil || code != 0 || len(pr.Removed) != 1 || pr.Removed[0].ID != ids[0] || pr.Kept != 1 {
		t.Errorf("prune: exit %d %v\n%s%s", code, err, out, errOut)
	}
	_, errOut, code = run(false, "prune", "--keep-days", "1", "--yes")
	if code != 0 || !strings.Contains(errOut, "nothing to prune: 1 snapshot(s) kept") {
		t.Errorf("second prune: exit %d %s", code, errOut)
	}
}

func TestListEmptyAndMissingDir(t *testing.T) {
	fs := writeFakeConfig(t, clitest.ClosedURL(t), clitest.ClosedURL(t), clitest.ClosedURL(t), &fakeStack{})
	f, out, errOut := testFactory(t, fs)
	if code := runRoot(t, f, "snapshot", "list", "--config", fs.Config); code != 0 || out.Len() != 0 || !strings.Contains(errOut.String(), "no snapshots in") {
		t.Errorf("exit %d out %q err %q", code, out, errOut)
	}
	f, out, _ = testFactory(t, fs)
	if code := runRoot(t, f, "snapshot", "list", "--config", fs.Config, "-o", "json"); code != 0 || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("json: exit %d %q", code, out)
	}
}

func TestNewCmdDiffAndPrune(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(*DiffOptions) bool
	}{
		{"refs", []string{"a", "b"}, "", func(o *DiffOptions) bool { return o.From == "a" && o.To == "b" && len(o.Expect) == 0 }},
		{"expect", []string{"a", "b", "--expect", "manager=4.10.0-1", "--expect", "indexer=4.10.0-1", "--ignore-index", "x-*"}, "",
			func(o *DiffOptions) bool {
				return o.Expect["manager"] == "4.10.0-1" && o.Expect["indexer"] == "4.10.0-1" && o.IgnoreIndices[0] == "x-*"
			}},
		{"bad expect", []string{"a", "b", "--expect", "manager"}, "use component=version", nil},
		{"unknown component", []string{"a", "b", "--expect", "kibana=1"}, "unknown component", nil},
		{"conflicting expect", []string{"a", "b", "--expect", "manager=1", "--expect", "manager=2"}, "given twice", nil},
		{"bad glob", []string{"a", "b", "--ignore-index", "["}, "--ignore-index", nil},
		{"prometheus", []string{"a", "b", "-o", "prometheus"}, "not supported", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clitest.Parse(NewCmdDiff, tt.args...)
			checkFlagErr(t, err, tt.wantErr)
			if tt.check != nil && !tt.check(got) {
				t.Errorf("options %+v", got)
			}
		})
	}
	prune := []struct {
		args    []string
		wantErr string
		keep    int
		days    int
	}{
		{[]string{"--keep", "3"}, "", 3, 0},
		{[]string{"--keep-days", "30", "--keep", "2"}, "", 2, 30},
		{nil, "give a retention rule", 0, 0},
		{[]string{"--keep", "-2"}, "must be positive", 0, 0},
	}
	for _, tt := range prune {
		got, err := clitest.Parse(NewCmdPrune, tt.args...)
		checkFlagErr(t, err, tt.wantErr)
		if tt.wantErr == "" && (got.Keep != tt.keep || got.KeepDays != tt.days) {
			t.Errorf("%v: %+v", tt.args, got)
		}
	}
}

// A capture killed mid-way (here: while the health checks run) publishes
// nothing; the previous snapshots stay intact and readable, and the debris
// of a save killed mid-write (a temporary file) is ignored by every verb.
func TestCaptureKilledLeavesPreviousIntact(t *testing.T) {
	fs, ids := twoSnapshots(t)
	dir := filepath.Join(fs.StateDir, "snapshots")
	before := map[string][]byte{}
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(dir, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		before[id] = b
	}
	// What renameio leaves behind when the process dies before the rename.
	tmp := filepath.Join(dir, "."+ids[1][:17]+"ffffff.json123456")
	if err := os.WriteFile(tmp, before[ids[1]][:len(before[ids[1]])/2], 0o640); err != nil {
		t.Fatal(err)
	}
	killCaptureHelper(t, fs)

	for id, want := range before {
		if got, err := os.ReadFile(filepath.Join(dir, id+".json")); err != nil || string(got) != string(want) {
			t.Errorf("%s changed: %v", id, err)
		}
	}
	f, out, errOut := testFactory(t, fs)
	if code := runRoot(t, f, "snapshot", "list", "--config", fs.Config, "-o", "json"); code != 0 {
		t.Fatalf("list exit %d %s", code, errOut)
	}
	var entries []snapshot.Entry
	if err := json.Unmarshal(out.Bytes(), &entries); err != nil || len(entries) != 2 {
		t.Fatalf("list after the kill: %v %s", err, out)
	}
	f, out, _ = testFactory(t, fs)
	if code := runRoot(t, f, "snapshot", "diff", "previous", "latest", "--config", fs.Config); code != 3 || !strings.Contains(out.String(), ids[0]) {
		t.Errorf("diff after the kill: exit %d\n%s", code, out)
	}
}

// Two captures within one second, the second with more documents and a
// smaller random id suffix: previous → latest is the capture order, so the
// diff reports documents added, not a critical loss.
func TestDiffPreviousLatestWithinOneSecond(t *testing.T) {
	fs := newFakeStack(t, fakeOpts{agents: 5})
	var ids []string
	for i, c := range []struct {
		at   time.Duration
		rand byte
		docs string
	}{{100 * time.Millisecond, 0xf0, "15342"}, {700 * time.Millisecond, 0x00, "15400"}} {
		fs.Indexer.Set("GET /_cat/indices/*", indexertest.Route{Body: []byte(`[
  {"health":"green","status":"open","index":"siem-alerts-4.x-2025.01.14","pri":"3","rep":"0","docs.count":"` + c.docs + `","store.size":"20971520"}]`)})
		f, out, errOut := testFactory(t, fs)
		now := fixedNow.Add(c.at)
		opts := captureOpts(f, fmt.Sprintf("c%d", i), &seqRand{n: c.rand})
		opts.Now = func() time.Time { return now }
		if err := runCapture(context.Background(), opts); err != nil {
			t.Fatalf("capture %d: %v\n%s", i, err, errOut)
		}
		ids = append(ids, decodeCapture(t, out.Bytes()).ID)
	}
	f, out, errOut := testFactory(t, fs)
	code := runRoot(t, f, "snapshot", "diff", "previous", "latest", "-o", "json", "--config", fs.Config)
	var rep snapshot.DiffJSON
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("diff -o json: exit %d %v\n%s%s", code, err, out, errOut)
	}
	if code != 0 || rep.Critical || rep.From.ID != ids[0] || rep.To.ID != ids[1] {
		t.Errorf("diff previous latest: exit %d critical %v, %s → %s, want %s → %s\n%s", code, rep.Critical, rep.From.ID, rep.To.ID, ids[0], ids[1], out)
	}
}
