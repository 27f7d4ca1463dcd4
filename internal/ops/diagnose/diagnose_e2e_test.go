//go:build e2e

package diagnose_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/units"
	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// healthChecks are the checks a unit that will not start shows up in.
const healthChecks = "units,ports,indexer.api"

// TestE2EStartFailures injects, one after another in one lab, each fault
// that keeps the indexer from starting: `services start indexer` must exit
// non-zero naming the cause, `health` must name it and print a fix; the
// fix is applied as printed (a command) or as documented, and health is OK
// again. The table of what was seen is logged for the closing note.
func TestE2EStartFailures(t *testing.T) {
	const offset = 330
	l := e2e.Up(t, e2e.Options{PortOffset: offset})
	shift, err := lab.PortShift()
	if err != nil {
		t.Fatal(err)
	}
	httpPort := l.Profile.Ports(offset + shift).Indexer
	unit := l.Profile.IndexerUnit()
	var table []string
	start := func() e2e.Result { return l.Siemctl("services", "start", "indexer", "--yes") }
	health := func() e2e.Result { return l.Siemctl("health", "--check", healthChecks) }
	// health off a TTY prints "<status>\t<check>\t<summary>" and "fix\t<check>\t<fix>": the fix of
	// the first check whose summary names the cause (units for a unit that failed, the
	// component's API check for one still up without answering)
	fixOf := func(out, cause string) string {
		check := ""
		for _, line := range strings.Split(out, "\n") {
			if f := strings.SplitN(line, "\t", 3); check == "" && len(f) == 3 && f[0] != "fix" && strings.Contains(f[2], cause) {
				check = f[1]
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if f, ok := strings.CutPrefix(line, "fix\t"+check+"\t"); ok && check != "" {
				return strings.TrimSpace(f)
			}
		}
		return ""
	}
	cases := []struct {
		fault   string
		start   []string // what services start must say (stderr)
		health  []string // what health must say (stdout)
		fix     []string // what health's fix must say
		applyFn func(t *testing.T, fix string)
		exit    int // services start's exit code: 1, or the cause's class (0: 1)
	}{
		{
			fault:  "port-held",
			start:  []string{"cause: port " + strconv.Itoa(httpPort) + " already bound by pid", "sleep infinity"},
			health: []string{"already bound by pid"},
			fix:    []string{"stop pid", "siemctl services start indexer"},
			applyFn: func(t *testing.T, fix string) {
				m := regexp.MustCompile(`stop pid (\d+)`).FindStringSubmatch(fix)
				if m == nil {
					t.Fatalf("no pid in fix %q", fix)
				}
				pid, _ := strconv.Atoi(m[1])
				if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				mustStart(t, start)
			},
		},
		{
			fault:  "data-dir-unwritable",
			start:  []string{"cannot write " + l.Path("var/lib", l.Profile.Indexer), "owned by root:root"},
			health: []string{"cannot write"},
			fix:    []string{"`chown -R "},
			applyFn: func(t *testing.T, fix string) {
				m := regexp.MustCompile("`([^`]+)`").FindStringSubmatch(fix)
				if m == nil {
					t.Fatalf("no command in fix %q", fix)
				}
				if out, err := exec.Command("sh", "-c", m[1]).CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", m[1], err, out)
				}
				mustStart(t, start)
			},
			exit: 4, // a directory its service user cannot write: permission
		},
		{
			fault:   "heap-too-large",
			start:   []string{"does not fit in the host's memory", "set in " + l.Path("etc", l.Profile.Indexer, "jvm.options.d/siemlab-heap.options")},
			health:  []string{"does not fit in the host's memory"},
			fix:     []string{"remove the -Xms/-Xmx lines from " + l.Path("etc", l.Profile.Indexer, "jvm.options.d/siemlab-heap.options")},
			applyFn: func(t *testing.T, fix string) { removeHeapLines(t, fix); mustStart(t, start) },
		},
		{
			fault:   "heap-order",
			start:   []string{"-Xms1g is above -Xmx512m"},
			health:  []string{"-Xms1g is above -Xmx512m"},
			fix:     []string{"remove the -Xms/-Xmx lines from "},
			applyFn: func(t *testing.T, fix string) { removeHeapLines(t, fix); mustStart(t, start) },
		},
		{
			fault:  "disk-full",
			start:  []string{"is full: 100% used", "tmpfs"},
			health: []string{"is full"},
			fix:    []string{"free space on " + l.Path("var/lib", l.Profile.Indexer)},
			// the documented change: the lab frees the space by unmounting the full filesystem
			applyFn: func(t *testing.T, _ string) { l.For(t).MustSiemlab("heal", "disk-full") },
		},
		{
			fault:  "start-timeout",
			start:  []string{"systemd gave up waiting for " + unit + " to start after TimeoutStartSec=3s"},
			health: []string{"TimeoutStartSec=3s"},
			fix:    []string{"zz-start-timeout.conf with [Service] TimeoutStartSec="},
			applyFn: func(t *testing.T, fix string) {
				m := regexp.MustCompile(`/etc/systemd/system/(\S+\.d/zz-start-timeout\.conf) with \[Service\] (TimeoutStartSec=\d+s)`).FindStringSubmatch(fix)
				if m == nil {
					t.Fatalf("no drop-in in fix %q", fix)
				}
				// the lab's /etc/systemd/system is its root's
				p := l.Path("etc/systemd/system", m[1])
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("[Service]\n"+m[2]+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(p) })
				// a loaded machine's systemd may take long over a reload
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				um, err := units.New(ctx, "unix:path="+filepath.Join(l.Dir, "rt/systemd/private"))
				if err != nil {
					t.Fatal(err)
				}
				defer um.Close()
				if err := um.DaemonReload(ctx); err != nil {
					t.Fatal(err)
				}
				mustStart(t, start)
				os.Remove(p)
				// a fresh deadline: the start above may take minutes on a loaded machine
				rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer rcancel()
				if err := um.DaemonReload(rctx); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, c := range cases {
		ok := t.Run(c.fault, func(t *testing.T) {
			l.MustSiemlab("fault", c.fault)
			began := time.Now()
			r := start()
			took := time.Since(began)
			said := r.Stderr
			// within the spec's wait, the JVM dead or still coming up (a loaded
			// machine): a failed start naming the cause, never "still starting"
			if want := max(c.exit, 1); r.Code != want || strings.Contains(said, "is still starting") {
				t.Errorf("services start with %s: exit %d after %s, want %d naming the cause:\n%s%s", c.fault, r.Code, took.Round(time.Second), want, r.Stdout, said)
			}
			for _, w := range c.start {
				if !strings.Contains(said, w) {
					t.Errorf("services start lacks %q:\n%s", w, said)
				}
			}
			startSaid := firstWith(said, "cause: ")
			h := health()
			if h.Code == 0 {
				t.Fatalf("health OK with %s:\n%s", c.fault, h.Stdout)
			}
			for _, w := range c.health {
				if !strings.Contains(h.Stdout, w) {
					t.Errorf("health lacks %q:\n%s", w, h.Stdout)
				}
			}
			fix := fixOf(h.Stdout, c.health[0])
			for _, w := range c.fix {
				if !strings.Contains(fix, w) {
					t.Errorf("health's fix lacks %q: %q\n%s", w, fix, h.Stdout)
				}
			}
			c.applyFn(t, fix)
			e2e.Eventually(t, 8*time.Minute, 5*time.Second, func() error {
				if h := health(); h.Code != 0 {
					return fmt.Errorf("health after the fix: exit %d\n%s", h.Code, h.Stdout)
				}
				return nil
			})
			table = append(table, fmt.Sprintf("| %s | exit %d after %s: %s | %s | %s | worked |", c.fault, r.Code, took.Round(time.Second), startSaid,
				firstWith(h.Stdout, c.health[0]), fix))
		})
		l.Siemlab("heal", c.fault)
		if !ok {
			// the next fault needs an indexer that starts
			mustStart(t, start)
		}
	}
	t.Logf("cause | services start | health | fix\n%s", strings.Join(table, "\n"))
}

// mustStart starts the indexer after a fix: it answers, or (a loaded
// machine) is still starting with no cause found (exit 8), never failed.
func mustStart(t *testing.T, start func() e2e.Result) {
	t.Helper()
	if r := start(); r.Code != 0 && (r.Code != 8 || !strings.Contains(r.Stderr, "is still starting")) {
		t.Fatalf("services start after the fix: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// removeHeapLines removes the -Xms/-Xmx lines from the file the fix names.
func removeHeapLines(t *testing.T, fix string) {
	t.Helper()
	m := regexp.MustCompile(`remove the -Xms/-Xmx lines from (\S+) `).FindStringSubmatch(fix)
	if m == nil {
		t.Fatalf("no file in fix %q", fix)
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if s := strings.TrimSpace(line); !strings.HasPrefix(s, "-Xms") && !strings.HasPrefix(s, "-Xmx") {
			keep = append(keep, line)
		}
	}
	if err := os.WriteFile(m[1], []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func firstWith(s, sub string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
