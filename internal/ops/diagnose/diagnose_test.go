package diagnose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/testenv"
	"github.com/siemctl/siemctl/internal/units"
)

// fixture is a host: the indexer's config, log and data directories under
// a temporary root, a /proc with meminfo and listening sockets, and the
// unit's output read from testdata (real OpenSearch 2.11 lines taken from
// the lab with each fault; @ROOT@ stands for the lab's root).
type fixture struct {
	root, proc string
	cfg        *config.Config
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), proc: t.TempDir()}
	conf := filepath.Join(f.root, "etc/siem-indexer")
	f.write(t, filepath.Join(conf, "opensearch.yml"), fmt.Sprintf(`cluster.name: siem-cluster
node.name: node-1
network.host: 127.0.0.1
http.port: 13300
transport.port: 23400
path.data: %s
path.logs: %s
`, filepath.Join(f.root, "var/lib/siem-indexer"), filepath.Join(f.root, "var/log/siem-indexer")))
	f.write(t, filepath.Join(conf, "jvm.options"), "## JVM configuration\n-Xms512m\n-Xmx512m\n8-10:-XX:+UseCMSInitiatingOccupancyOnly\n")
	for _, d := range []string{"var/lib/siem-indexer/nodes", "var/log/siem-indexer"} {
		if err := os.MkdirAll(filepath.Join(f.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.write(t, filepath.Join(f.proc, "meminfo"), "MemTotal:       24684096 kB\nMemFree:         1000000 kB\n")
	f.write(t, filepath.Join(f.proc, "net/tcp"), "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	f.cfg = &config.Config{Indexer: config.Indexer{URL: "https://127.0.0.1:13300", ConfigDir: conf, DataDir: filepath.Join(f.root, "var/lib/siem-indexer")}}
	return f
}

func (f *fixture) write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lines reads testdata/name with @ROOT@ set to the fixture's root.
func (f *fixture) lines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(strings.ReplaceAll(string(b), "@ROOT@", f.root), "\n"), "\n")
}

func (f *fixture) diagnose(t *testing.T, st units.UnitStatus, lines []string) Report {
	t.Helper()
	in := Input{Component: "indexer", Unit: st, Config: f.cfg,
		LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) { return lines, nil }}
	return Diagnose(context.Background(), in, Host{ProcRoot: f.proc})
}

var failed = units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "failed", SubState: "failed",
	Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1}

func assertFinding(t *testing.T, r Report, kind string, cause, fix []string) {
	t.Helper()
	c := r.Cause()
	if c.Kind != kind {
		t.Fatalf("kind %q, want %q: %+v", c.Kind, kind, r)
	}
	for _, w := range cause {
		if !strings.Contains(c.Cause, w) {
			t.Errorf("cause %q lacks %q", c.Cause, w)
		}
	}
	for _, w := range fix {
		if !strings.Contains(c.Fix, w) {
			t.Errorf("fix %q lacks %q", c.Fix, w)
		}
	}
	if strings.Contains(c.Fix, "restart") {
		t.Errorf("fix says restart: %q", c.Fix)
	}
}

// foreignListener makes the fixture's /proc show 127.0.0.1:13300 (0x33F4) listening on socket
// inode 77, held by pid 6225 (sleep infinity): not the indexer's unit.
func (f *fixture) foreignListener(t *testing.T) {
	t.Helper()
	f.write(t, filepath.Join(f.proc, "net/tcp"), `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:33F4 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0
`)
	f.write(t, filepath.Join(f.proc, "6225/cmdline"), "sleep\x00infinity\x00")
	if err := os.MkdirAll(filepath.Join(f.proc, "6225/fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("socket:[77]", filepath.Join(f.proc, "6225/fd/3")); err != nil {
		t.Fatal(err)
	}
}

func TestPortBound(t *testing.T) {
	f := newFixture(t)
	f.foreignListener(t)
	r := f.diagnose(t, failed, f.lines(t, "port-bound.out"))
	assertFinding(t, r, KindPortBound, []string{"port 13300 already bound by pid 6225 (sleep infinity)"},
		[]string{"stop pid 6225 (sleep infinity)", "http.port in " + filepath.Join(f.root, "etc/siem-indexer/opensearch.yml"), "siemctl services start indexer"})
	if r.Result != "exit-code (exit status 1)" {
		t.Errorf("result %q", r.Result)
	}
	// the holder gone meanwhile: the port is still named, and how to find the next one
	f.write(t, filepath.Join(f.proc, "net/tcp"), "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	r = f.diagnose(t, failed, f.lines(t, "port-bound.out"))
	assertFinding(t, r, KindPortBound, []string{"port 13300 was already bound"}, []string{"ss -ltnp"})
}

// Lines of an earlier start are not this start's cause.
func TestSinceStart(t *testing.T) {
	f := newFixture(t)
	lines := f.lines(t, "port-bound.out")
	st := failed
	st.StartedAt = time.Date(2026, 11, 27, 22, 20, 0, 0, time.Local)
	r := f.diagnose(t, st, lines)
	if k := r.Cause().Kind; k != KindNoEvidence {
		t.Errorf("an old bind failure was taken for this start's: %+v", r.Cause())
	}
	// a JVM that refused its options prints no stamp: kept after the last stamped line
	more := append(append([]string{}, lines...), "Error occurred during initialization of VM", "Initial heap size set to a larger value than the maximum heap size")
	r = f.diagnose(t, st, more)
	assertFinding(t, r, KindHeapOrder, []string{"-Xms512m is above -Xmx512m"}, nil)
}

// A unit still starting has no cause yet: it says so, with its last line.
func TestStillStarting(t *testing.T) {
	f := newFixture(t)
	st := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "active", SubState: "running", MainPID: 42}
	lines := f.lines(t, "port-bound.out")[:3]
	r := f.diagnose(t, st, lines)
	assertFinding(t, r, KindStillStarting, []string{"still starting (active/running)", "its log's last line: [2026-11-27T"}, []string{"wait"})
}

// A unit killed from outside (kill -9, the OOM killer) with nothing in its log: the signal, and the
// restart that undoes it, with where to look if it happens again.
func TestKilled(t *testing.T) {
	f := newFixture(t)
	st := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "failed", SubState: "failed",
		Result: "signal", ExecMainCode: 2, ExecMainStatus: 9}
	lines := []string{"[2026-11-27T22:15:41,824][INFO ][o.o.n.Node               ] [node-1] started"}
	c := f.diagnose(t, st, lines).Cause()
	if c.Kind != KindKilled || !strings.Contains(c.Cause, "killed by signal 9 (killed) from outside") ||
		!strings.HasPrefix(c.Fix, "siemctl services restart indexer;") || !strings.Contains(c.Fix, "OOM killer") {
		t.Fatalf("%+v", c)
	}
	// a crash that dumped core is not a kill from outside: the lines that say why, no restart
	st.ExecMainCode, st.ExecMainStatus, st.Result = 3, 11, "core-dump"
	if c := f.diagnose(t, st, lines).Cause(); c.Kind == KindKilled {
		t.Fatalf("a core dump read as a kill: %+v", c)
	}
}

// Whatever no detector knows: the exact lines that say why.
func TestUnknownCause(t *testing.T) {
	f := newFixture(t)
	lines := []string{
		"[2026-11-27T22:15:41,824][INFO ][o.o.n.Node               ] [node-1] initialized",
		"[2026-11-27T22:15:41,836][INFO ][o.o.n.Node               ] [node-1] JVM arguments [-XX:+HeapDumpOnOutOfMemoryError]",
		"[2026-11-27T22:15:47,763][ERROR][o.o.b.OpenSearchUncaughtExceptionHandler] [node-1] uncaught exception in thread [main]",
		"java.lang.IllegalStateException: something new",
		"\tat org.opensearch.node.Node.start(Node.java:1450) ~[opensearch-2.11.1.jar:2.11.1]",
	}
	r := f.diagnose(t, failed, lines)
	assertFinding(t, r, KindLogLines, []string{"its log says: java.lang.IllegalStateException: something new"}, []string{"act on the lines above"})
	for _, e := range r.Cause().Evidence {
		if strings.Contains(e, "JVM arguments") || strings.Contains(e, "\tat ") {
			t.Errorf("evidence %q is not a line that says why", e)
		}
	}
}

func TestStartTimeout(t *testing.T) {
	f := newFixture(t)
	f.write(t, filepath.Join(f.root, "var/log/siem-indexer/siem-cluster.log"), strings.Join([]string{
		"[2026-11-27T22:14:57,349][INFO ][o.o.n.Node               ] [node-1] version[2.11.1], pid[6300], build[tar/x/2023-11-29T21:43:44.221253956Z], OS[Linux/6.1/amd64], JVM[Eclipse Adoptium/OpenJDK 64-Bit Server VM/17.0.9/17.0.9+9]",
		"[2026-11-27T22:15:41,836][INFO ][o.o.n.Node               ] [node-1] starting ...",
		"[2026-11-27T22:16:21,100][INFO ][o.o.n.Node               ] [node-1] started",
	}, "\n")+"\n")
	st := failed
	st.Result, st.ExecMainCode, st.ExecMainStatus, st.TimeoutStart = "timeout", 0, 0, 3*time.Second
	st.DropInPaths = []string{"/etc/systemd/system/siem-indexer.service.d/slow.conf"}
	r := f.diagnose(t, st, nil)
	assertFinding(t, r, KindStartTimeout, []string{"after TimeoutStartSec=3s"},
		[]string{"zz-start-timeout.conf with [Service] TimeoutStartSec=240s", "systemctl daemon-reload"})
	if !strings.Contains(strings.Join(r.Cause().Evidence, "\n"), "its last complete start took 1m24s") {
		t.Errorf("evidence %v", r.Cause().Evidence)
	}
}

func TestPermission(t *testing.T) {
	f := newFixture(t)
	lock := filepath.Join(f.root, "var/lib/siem-indexer/nodes/0/node.lock")
	f.write(t, lock, "")
	logs := filepath.Join(f.root, "var/log/siem-indexer")
	owner, group := fmt.Sprint(os.Getuid()), fmt.Sprint(os.Getgid())
	if os.Getuid() == 0 {
		// the service user owns its log directory; root owns the data
		if err := os.Chown(logs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		owner, group = nameOf(65534, false), nameOf(65534, true)
	} else {
		owner, group = nameOf(os.Getuid(), false), nameOf(os.Getgid(), true)
	}
	r := f.diagnose(t, failed, f.lines(t, "permission.out"))
	assertFinding(t, r, KindPermission, []string{"cannot write " + lock, "mode -rw-r--r--", "runs as " + owner},
		[]string{fmt.Sprintf("`chown -R %s:%s %s`", owner, group, filepath.Join(f.root, "var/lib/siem-indexer")), "siemctl services start indexer"})
	if !errors.Is(r.Err(), ErrAccessDenied) {
		t.Errorf("class %v, want ErrAccessDenied", r.Err())
	}
}

func TestHeapOrder(t *testing.T) {
	f := newFixture(t)
	over := filepath.Join(f.root, "etc/siem-indexer/jvm.options.d/siemlab-heap.options")
	f.write(t, over, "# an override\n-Xms1g\n-Xmx512m\n")
	r := f.diagnose(t, failed, f.lines(t, "heap-order.out"))
	assertFinding(t, r, KindHeapOrder, []string{"the JVM refused its options: -Xms1g is above -Xmx512m"},
		[]string{"remove the -Xms/-Xmx lines from " + over, "jvm.options sets -Xms512m -Xmx512m, which fits"})
	// no sound jvm.options to fall back on: the values to set, in the file that sets them
	f.write(t, filepath.Join(f.root, "etc/siem-indexer/jvm.options"), "-Xms4g\n-Xmx2g\n")
	os.Remove(over)
	r = f.diagnose(t, failed, f.lines(t, "heap-order.out"))
	assertFinding(t, r, KindHeapOrder, []string{"-Xms4g is above -Xmx2g"},
		[]string{"in " + filepath.Join(f.root, "etc/siem-indexer/jvm.options") + " set -Xms2g and -Xmx2g (at most half the host's 23.5 GiB)"})
}

// The heap larger than the host's memory, after an earlier start that
// failed otherwise: only this run's cause.
func TestHeapTooLarge(t *testing.T) {
	f := newFixture(t)
	over := filepath.Join(f.root, "etc/siem-indexer/jvm.options.d/siemlab-heap.options")
	f.write(t, over, "-Xms48210m\n-Xmx48210m\n")
	lines := append(f.lines(t, "heap-order.out"), f.lines(t, "heap-too-large.out")...)
	r := f.diagnose(t, failed, lines)
	assertFinding(t, r, KindHeapSize, []string{"the heap (-Xms48210m -Xmx48210m) does not fit in the host's memory (23.5 GiB)"},
		[]string{"remove the -Xms/-Xmx lines from " + over})
	if len(r.Findings) != 1 {
		t.Errorf("an earlier run's cause reported too: %+v", r.Findings)
	}
}

// The data directory's filesystem ran out of space (real lines of a start
// on a full 4 MiB tmpfs): the filesystem and how full it is now.
func TestDiskFull(t *testing.T) {
	f := newFixture(t)
	r := f.diagnose(t, failed, f.lines(t, "disk-full.out"))
	data := filepath.Join(f.root, "var/lib/siem-indexer")
	assertFinding(t, r, KindDiskFull, []string{data, "% used", "free of"}, []string{"free space on ", "siemctl services start indexer"})
	if !strings.Contains(strings.Join(r.Cause().Evidence, "\n"), "No space left on device") {
		t.Errorf("evidence %v", r.Cause().Evidence)
	}
}

// The end of a start's wait on a loaded host: the indexer has not reached
// its bind yet (no "Address already in use" in its log), but a foreign
// process holds its port: the port's owner is the cause, found as the
// health check ports finds it; the unit's own process on it is not.
func TestPortHeldWhileStarting(t *testing.T) {
	f := newFixture(t)
	f.foreignListener(t)
	st := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "active", SubState: "running", MainPID: 42}
	lines := f.lines(t, "port-bound.out")[:3]
	diag := func(own []int) Report {
		in := Input{Component: "indexer", Unit: st, Config: f.cfg,
			LogLines:  func(context.Context, units.UnitStatus, int) ([]string, error) { return lines, nil },
			Processes: func(context.Context) ([]int, error) { return own, nil }}
		return Diagnose(context.Background(), in, Host{ProcRoot: f.proc})
	}
	assertFinding(t, diag([]int{42}), KindPortBound, []string{"port 13300 already bound by pid 6225 (sleep infinity)"},
		[]string{"stop pid 6225 (sleep infinity)", "http.port in " + filepath.Join(f.root, "etc/siem-indexer/opensearch.yml"), "siemctl services start indexer"})
	// the unit's own process on its port: nothing foreign, still starting
	assertFinding(t, diag([]int{42, 6225}), KindStillStarting, []string{"still starting"}, nil)
}

// The same for a data directory the service user cannot write, before the
// JVM reaches it: its owner and mode are the cause, with the chown.
func TestDataDirUnwritableWhileStarting(t *testing.T) {
	f := newFixture(t)
	data := filepath.Join(f.root, "var/lib/siem-indexer")
	owner, group := nameOf(os.Getuid(), false), nameOf(os.Getgid(), true)
	if os.Getuid() == 0 {
		// the service user owns its log directory; root owns the data
		if err := os.Chown(filepath.Join(f.root, "var/log/siem-indexer"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		owner, group = nameOf(65534, false), nameOf(65534, true)
	}
	st := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "activating", SubState: "start", MainPID: 42}
	lines := f.lines(t, "port-bound.out")[:3]
	if os.Getuid() != 0 {
		// the user's own directory, not writable
		if err := os.Chmod(data, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(data, 0o755) })
	}
	// a stray file of another owner is no cause
	f.write(t, filepath.Join(data, "nodes/stray"), "")
	if os.Getuid() == 0 {
		if err := os.Chown(data, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(data, "nodes"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		assertFinding(t, f.diagnose(t, st, lines), KindStillStarting, []string{"still starting"}, nil)
		if err := os.Chown(data, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	r := f.diagnose(t, st, lines)
	assertFinding(t, r, KindPermission, []string{"cannot write " + data + ":", "runs as " + owner},
		[]string{fmt.Sprintf("`chown -R %s:%s %s`", owner, group, data), "siemctl services start indexer"})
	// written by the service user: nothing to say but that it is still starting
	if os.Getuid() == 0 {
		testenv.ChownTree(t, data, 65534, 65534)
	} else if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	assertFinding(t, f.diagnose(t, st, lines), KindStillStarting, []string{"still starting"}, nil)
}

// "Not yet initialized" from a node still coming up (before it started, or just after, reading its
// security index on a loaded host) is not a missing security index; from a node started minutes
// ago it is.
func TestSecurityInit(t *testing.T) {
	f := newFixture(t)
	st := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "active", SubState: "running", MainPID: 42}
	started := "[2026-11-27T22:15:41,836][INFO ][o.o.n.Node               ] [node-1] started"
	notYet := func(at string) string {
		return "[2026-11-27T" + at + ",725][ERROR][o.o.s.a.BackendRegistry  ] [node-1] Not yet initialized (you may need to run securityadmin)"
	}
	base := f.lines(t, "port-bound.out")[:3]
	for _, tt := range []struct {
		name  string
		lines []string
		kind  string
	}{
		{"before started", append(append([]string{}, base...), notYet("22:15:40")), KindStillStarting},
		{"just after started", append(append([]string{}, base...), started, notYet("22:16:10")), KindStillStarting},
		{"minutes after started", append(append([]string{}, base...), started, notYet("22:16:10"), notYet("22:19:10")), KindSecurityInit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if k := f.diagnose(t, st, tt.lines).Cause().Kind; k != tt.kind {
				t.Errorf("kind %s, want %s", k, tt.kind)
			}
		})
	}
}

// TestClusterJoin: an upgraded node that runs but cannot join its cluster (real OpenSearch 2.19.3
// lines of the lab's indexer-no-rejoin fault): the refused handshake names both cluster names and
// wins over the security plugin's "not initialised" that follows from it.
func TestClusterJoin(t *testing.T) {
	f := newFixture(t)
	active := units.UnitStatus{Name: "siem-indexer.service", LoadState: "loaded", ActiveState: "active", SubState: "running"}
	r := f.diagnose(t, active, f.lines(t, "cluster-join.out"))
	assertFinding(t, r, KindClusterJoin, []string{"cluster.name [siemlab-no-rejoin]", "the other nodes with [siem-cluster]"},
		[]string{"set cluster.name: siem-cluster in " + filepath.Join(f.root, "etc/siem-indexer/opensearch.yml")})
	for _, x := range r.Findings {
		if x.Kind == KindSecurityInit {
			t.Errorf("security init named for a node that has not joined: %+v", x)
		}
	}
	// without a refused handshake: no elected cluster manager found
	var lines []string
	for _, l := range f.lines(t, "cluster-join.out") {
		if !strings.Contains(l, "does not match") {
			lines = append(lines, l)
		}
	}
	r = f.diagnose(t, active, lines)
	assertFinding(t, r, KindClusterJoin, []string{"finds no elected cluster manager"}, []string{"discovery.seed_hosts"})
}

// path.data misspelt (a directory that does not exist, its parent root's):
// the setting and the directory with the node's data are named; no chown of
// the parent, which other software shares (real lines from the lab).
func TestMissingDataDir(t *testing.T) {
	f := newFixture(t)
	conf := filepath.Join(f.root, "etc/siem-indexer/opensearch.yml")
	f.write(t, conf, fmt.Sprintf("cluster.name: siem-cluster\nnode.name: node-1\npath.data: %s\npath.logs: %s\n",
		filepath.Join(f.root, "var/lib/siem-indexr"), filepath.Join(f.root, "var/log/siem-indexer")))
	r := f.diagnose(t, failed, f.lines(t, "missing-data-dir.out"))
	data := filepath.Join(f.root, "var/lib/siem-indexer")
	assertFinding(t, r, KindMissingDir, []string{"path.data " + filepath.Join(f.root, "var/lib/siem-indexr") + " does not exist", "set in " + conf},
		[]string{"set path.data back to " + data + " in " + conf, "siemctl services start indexer"})
	if c := r.Cause(); strings.Contains(c.Fix, "chown") || !strings.Contains(strings.Join(c.Evidence, "\n"), data+"/nodes") {
		t.Errorf("fix %q evidence %v", c.Fix, c.Evidence)
	}
}

// A directory outside the component's own (a shared parent) is never
// handed to the service user.
func TestNoChownOutsideOwnDirs(t *testing.T) {
	f := newFixture(t)
	ev := &Evidence{Input: Input{Component: "indexer", Config: f.cfg}}
	shared := filepath.Join(f.root, "var/lib")
	info, err := os.Stat(shared)
	if err != nil {
		t.Fatal(err)
	}
	var fd Finding
	ev.cannotWrite(&fd, shared, info, "nobody", 65534, 65534)
	if strings.Contains(fd.Fix, "chown") || !strings.Contains(fd.Fix, "not one of indexer's own directories") {
		t.Errorf("fix %q", fd.Fix)
	}
	fd = Finding{}
	ev.cannotWrite(&fd, filepath.Join(f.root, "var/lib/siem-indexer/nodes"), info, "nobody", 65534, 65534)
	if !strings.Contains(fd.Fix, "chown -R") || !strings.Contains(fd.Fix, filepath.Join(f.root, "var/lib/siem-indexer")+"`") {
		t.Errorf("own data dir: fix %q", fd.Fix)
	}
}

// An unknown setting added to opensearch.yml by hand: the setting, the
// file and its line, not "[ERROR][o.o.b.Bootstrap] Exception" (real lines).
func TestUnknownSetting(t *testing.T) {
	f := newFixture(t)
	conf := filepath.Join(f.root, "etc/siem-indexer/opensearch.yml")
	b, _ := os.ReadFile(conf)
	f.write(t, conf, string(b)+"foo.bar: 1\n")
	lines := append(f.lines(t, "unknown-setting.out"), "[2026-12-07T17:59:49,400][ERROR][o.o.b.Bootstrap          ] [node-1] Exception",
		"java.lang.IllegalArgumentException: unknown setting [foo.bar] please check that any required plugins are installed, or check the breaking changes documentation for removed settings")
	r := f.diagnose(t, failed, lines)
	assertFinding(t, r, KindUnknownSetting, []string{"unknown setting [foo.bar] in " + conf + " (line 8)"}, []string{"remove or correct foo.bar in " + conf + " (line 8)", "siemctl services start indexer"})
}

// The Caused-by chain is followed to its root when no detector knows the
// failure: the root line is the cause, not the wrapper's "Exception".
func TestRootCauseOfUnknownFailure(t *testing.T) {
	lines := []string{
		"[2026-12-07T17:59:49,400][ERROR][o.o.b.Bootstrap          ] [node-1] Exception",
		"org.opensearch.OpenSearchException: failed to bind service",
		"\tat org.opensearch.node.Node.<init>(Node.java:578)",
		"Caused by: java.nio.file.FileSystemException: /var/lib/siem-indexer/nodes/0: Read-only file system",
		"\tat sun.nio.fs.UnixException.translateToIOException(UnixException.java:100)",
	}
	f := newFixture(t)
	r := f.diagnose(t, failed, lines)
	c := r.Cause()
	if c.Kind != KindLogLines || !strings.Contains(c.Cause, "Read-only file system") || !strings.Contains(c.Fix, "Read-only file system") || strings.Contains(c.Fix, "act on the lines above") {
		t.Fatalf("%+v", c)
	}
}

// A JVM option the JVM does not know, added to jvm.options by hand: read
// from the JVM's own output, named with its file and line (real lines).
func TestJVMOption(t *testing.T) {
	f := newFixture(t)
	jvm := filepath.Join(f.root, "etc/siem-indexer/jvm.options")
	b, _ := os.ReadFile(jvm)
	f.write(t, jvm, string(b)+"-XX:+UseFooCollector\n")
	r := f.diagnose(t, failed, f.lines(t, "jvm-option.out"))
	assertFinding(t, r, KindJVMOption, []string{"the JVM refuses the option UseFooCollector (set in " + jvm + ":5)"}, []string{"remove or correct UseFooCollector in " + jvm + ":5"})
	// the same option from a drop-in's Environment=OPENSEARCH_JAVA_OPTS: the drop-in is named
	f.write(t, jvm, string(b))
	dropIn := filepath.Join(f.root, "etc/systemd/system/siem-indexer.service.d/heap.conf")
	f.write(t, dropIn, "[Service]\nEnvironment=OPENSEARCH_JAVA_OPTS=-XX:+UseFooCollector\n")
	st := failed
	st.DropInPaths = []string{dropIn}
	r = f.diagnose(t, st, f.lines(t, "jvm-option.out"))
	assertFinding(t, r, KindJVMOption, []string{"set in " + dropIn + ":2"}, []string{"systemctl daemon-reload"})
}

// A heap set by a drop-in's Environment=OPENSEARCH_JAVA_OPTS (made by hand)
// wins over jvm.options: the drop-in is named, not jvm.options.
func TestHeapFromDropIn(t *testing.T) {
	f := newFixture(t)
	dropIn := filepath.Join(f.root, "etc/systemd/system/siem-indexer.service.d/heap.conf")
	f.write(t, dropIn, "[Service]\nEnvironment=OPENSEARCH_JAVA_OPTS=\"-Xms64g -Xmx64g\"\n")
	st := failed
	st.DropInPaths = []string{dropIn}
	r := f.diagnose(t, st, f.lines(t, "heap-too-large.out"))
	c := r.Cause()
	if c.Kind != KindHeapSize || !strings.Contains(strings.Join(c.Evidence, "\n"), "-Xmx64g set in "+dropIn) ||
		!strings.Contains(c.Fix, "remove -Xms/-Xmx from Environment=OPENSEARCH_JAVA_OPTS in "+dropIn) || !strings.Contains(c.Fix, "systemctl daemon-reload") {
		t.Fatalf("%+v", c)
	}
	// unquoted, as an admin writes it: systemd passes -Xms100g alone (-Xmx100g is no
	// assignment), and the JVM gets it with jvm.options' -Xmx512m
	f.write(t, dropIn, "[Service]\nEnvironment=OPENSEARCH_JAVA_OPTS=-Xms100g -Xmx100g\n")
	r = f.diagnose(t, st, f.lines(t, "heap-order.out"))
	assertFinding(t, r, KindHeapOrder, []string{"the JVM refused its options: -Xms100g is above -Xmx512m"},
		[]string{"remove -Xms/-Xmx from Environment=OPENSEARCH_JAVA_OPTS in " + dropIn, "systemctl daemon-reload"})
	ev := strings.Join(r.Cause().Evidence, "\n")
	for _, w := range []string{"-Xms100g set in " + dropIn, "-Xmx512m set in " + filepath.Join(f.root, "etc/siem-indexer/jvm.options"), dropIn + ": systemd ignores -Xmx100g"} {
		if !strings.Contains(ev, w) {
			t.Errorf("evidence lacks %q:\n%s", w, ev)
		}
	}
}

// unitEnv reads Environment= as systemd does.
func TestUnitEnv(t *testing.T) {
	for _, tt := range []struct {
		line, value string
		ignored     []string
		ok          bool
	}{
		{`Environment=OPENSEARCH_JAVA_OPTS=-Xms1g -Xmx1g`, "-Xms1g", []string{"-Xmx1g"}, true},
		{`Environment="OPENSEARCH_JAVA_OPTS=-Xms1g -Xmx1g"`, "-Xms1g -Xmx1g", nil, true},
		{`Environment=OPENSEARCH_JAVA_OPTS="-Xms1g -Xmx1g" OTHER=x`, "-Xms1g -Xmx1g", nil, true},
		{`Environment=A=1 'OPENSEARCH_JAVA_OPTS=-Xmx2g' OPENSEARCH_JAVA_OPTS=-Xmx3g`, "-Xmx3g", nil, true},
		{`Environment=OPENSEARCH_PATH_CONF=/etc/x`, "", nil, false},
		{`EnvironmentFile=/etc/default/x`, "", nil, false},
	} {
		v, ign, ok := unitEnv(tt.line, "OPENSEARCH_JAVA_OPTS")
		if v != tt.value || ok != tt.ok || strings.Join(ign, "|") != strings.Join(tt.ignored, "|") {
			t.Errorf("unitEnv(%q) = %q %q %v, want %q %q %v", tt.line, v, ign, ok, tt.value, tt.ignored, tt.ok)
		}
	}
}

// A drop-in whose ExecStart names a program that does not exist (exit
// 203): the drop-in is named; an earlier run's lines are not the cause.
func TestExecFailedDropIn(t *testing.T) {
	f := newFixture(t)
	dropIn := filepath.Join(f.root, "etc/systemd/system/siem-indexer.service.d/exec.conf")
	f.write(t, dropIn, "[Service]\nExecStart=\nExecStart=/usr/share/siem-indexer/bin/opensearch-typo\n")
	st := failed
	st.ExecMainStatus, st.DropInPaths = 203, []string{dropIn}
	r := f.diagnose(t, st, []string{"[2026-12-07T18:04:15,240][INFO ][o.o.n.Node               ] [node-1] closed"})
	assertFinding(t, r, KindExecFailed, []string{"could not execute siem-indexer.service's ExecStart (exit status 203/EXEC"},
		[]string{"correct or remove the ExecStart at " + dropIn + ":3 (ExecStart=/usr/share/siem-indexer/bin/opensearch-typo)", "systemctl daemon-reload"})
}

// api.yaml broken by hand (real ossec.log line from the lab).
func TestAPIConfig(t *testing.T) {
	in := Input{Component: "manager", Unit: units.UnitStatus{Name: "wazuh-manager.service", ActiveState: "failed", SubState: "failed", Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1},
		LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) {
			return []string{"2026/12/07 18:08:34 wazuh-apid: ERROR: (2000) Error loading the API configuration file /var/ossec/api/configuration/api.yaml: yaml: line 29: did not find expected ',' or ']'"}, nil
		}}
	r := Diagnose(context.Background(), in, Host{ProcRoot: t.TempDir()})
	assertFinding(t, r, KindAPIConfig, []string{"cannot load its configuration /var/ossec/api/configuration/api.yaml: yaml: line 29"},
		[]string{"fix /var/ossec/api/configuration/api.yaml where the error says (yaml: line 29", "siemctl services start manager"})
}

// A rules file broken by hand: the fix names the rules file analysisd
// reports, not ossec.conf (real analysisd -t line from the lab).
func TestRulesFileError(t *testing.T) {
	cfg := &config.Config{Manager: config.Manager{InstallDir: "/var/ossec"}}
	in := Input{Component: "manager", Config: cfg, Unit: units.UnitStatus{Name: "wazuh-manager.service", ActiveState: "failed", SubState: "failed", Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 1},
		LogLines: func(context.Context, units.UnitStatus, int) ([]string, error) { return nil, nil },
		ConfigCheck: func(context.Context) ([]string, bool, error) {
			return []string{"wazuh-analysisd: ERROR: (1226): Error reading XML file 'etc/rules/local_rules.xml': XMLERR: Element 'rule' not closed. (line 14)."}, false, nil
		}}
	r := Diagnose(context.Background(), in, Host{ProcRoot: t.TempDir()})
	if c := r.Cause(); !strings.Contains(c.Fix, "fix /var/ossec/etc/rules/local_rules.xml at the reported element and line") {
		t.Fatalf("%+v", c)
	}
}

// A configuration file the service user cannot read: "cannot read", and a
// chown of that file alone, never -R.
func TestCannotReadFile(t *testing.T) {
	f := newFixture(t)
	yml := filepath.Join(f.root, "etc/siem-indexer/opensearch.yml")
	if err := os.Chmod(yml, 0o600); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(yml)
	ev := &Evidence{Input: Input{Component: "indexer", Config: f.cfg}}
	var fd Finding
	ev.cannotWrite(&fd, yml, info, "nobody", 65534, 65534)
	if os.Getuid() != 65534 && (!strings.Contains(fd.Cause, "cannot read "+yml) || strings.Contains(fd.Fix, "chown -R") || !strings.Contains(fd.Fix, "`chown nobody:nogroup "+yml+"`")) {
		t.Fatalf("%+v", fd)
	}
}

// A drop-in with Type=notify and a short TimeoutStartSec (made by hand):
// the node had started, the drop-in is named, "more time" is not the fix.
func TestNotifyTimeoutDropIn(t *testing.T) {
	f := newFixture(t)
	dropIn := filepath.Join(f.root, "etc/systemd/system/siem-indexer.service.d/notify.conf")
	f.write(t, dropIn, "[Service]\nType=notify\nTimeoutStartSec=5\n")
	st := units.UnitStatus{Name: "siem-indexer.service", ActiveState: "failed", SubState: "failed", Result: "timeout", TimeoutStart: 5 * time.Second, DropInPaths: []string{dropIn}}
	r := f.diagnose(t, st, []string{"[2026-12-07T18:16:02,112][INFO ][o.o.n.Node               ] [node-1] started"})
	c := r.Cause()
	if c.Kind != KindStartTimeout || !strings.Contains(c.Cause, dropIn+" sets Type=notify") || !strings.Contains(c.Fix, "remove Type=notify from "+dropIn+" (line 2") || strings.Contains(c.Fix, "TimeoutStartSec=") {
		t.Fatalf("%+v", c)
	}
}
