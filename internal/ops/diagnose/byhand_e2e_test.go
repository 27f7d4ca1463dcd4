//go:build e2e

package diagnose_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// TestE2EFaultsByHand makes each fault the way an admin does (a file
// edited, another process on the port or holding the node's lock; never
// `siemlab fault`):
// `services restart indexer` must exit non-zero naming the real cause, the
// fix it prints is followed, and the indexer starts again.
func TestE2EFaultsByHand(t *testing.T) {
	const offset = 360
	l := e2e.Up(t, e2e.Options{PortOffset: offset})
	shift, err := lab.PortShift()
	if err != nil {
		t.Fatal(err)
	}
	httpPort := l.Profile.Ports(offset + shift).Indexer
	start := func() e2e.Result { return l.Siemctl("services", "start", "indexer", "--yes") }
	stop := func() {
		if r := l.Siemctl("services", "stop", "indexer", "--yes"); r.Code != 0 {
			t.Fatalf("stop: %d %s", r.Code, r.Stderr)
		}
	}
	yml := l.Path("etc", l.Profile.Indexer, "opensearch.yml")
	jvm := l.Path("etc", l.Profile.Indexer, "jvm.options")
	orig := map[string][]byte{}
	for _, f := range []string{yml, jvm} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		orig[f] = b
	}
	restore := func(f string) {
		if err := os.WriteFile(f, orig[f], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit := func(f, from, to string) {
		s := string(orig[f])
		if from == "" {
			s += to
		} else {
			s = strings.Replace(s, from, to, 1)
		}
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := l.Path("var/lib", l.Profile.Indexer)
	lockFile := data + "/nodes/0/node.lock"
	keystore := l.Path("etc", l.Profile.Indexer, "opensearch.keystore")
	var srv *http.Server
	var held *os.File
	var keystoreWas []byte
	cases := []struct {
		name  string
		make  func()
		want  []string // in services start's stderr
		never string   // a fix that must not be printed
		fix   func(stderr string)
	}{
		{"path.data misspelt",
			func() { edit(yml, "path.data: "+data, "path.data: "+data+"x") },
			[]string{"path.data " + data + "x does not exist (set in " + yml + ")", "fix: set path.data back to " + data + " in " + yml},
			"chown", func(string) { restore(yml) }},
		{"unknown setting",
			func() { edit(yml, "", "foo.bar: 1\n") },
			[]string{"unknown setting [foo.bar] in " + yml, "fix: remove or correct foo.bar in " + yml},
			"act on the lines above", func(string) { restore(yml) }},
		{"JVM option",
			func() { edit(jvm, "", "-XX:+UseFooCollector\n") },
			[]string{"the JVM refuses the option UseFooCollector (set in " + jvm + ":", "fix: remove or correct UseFooCollector in " + jvm},
			"act on the lines above", func(string) { restore(jvm) }},
		{"another HTTP server on the port",
			func() {
				stop()
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(httpPort))
				if err != nil {
					t.Fatal(err)
				}
				srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "<html>not the indexer</html>") })}
				go srv.Serve(ln)
			},
			[]string{fmt.Sprintf("port %d already bound by pid %d", httpPort, os.Getpid())},
			"", func(string) { srv.Close() }},
		{"node.lock held by another process",
			func() {
				// a second node started by hand on the same path.data holds the lock as
				// Lucene takes it (fcntl, the whole file): here this test's process
				stop()
				f, err := os.OpenFile(lockFile, os.O_RDWR|os.O_CREATE, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}); err != nil {
					t.Fatal(err)
				}
				held = f
			},
			[]string{"the indexer's data path lock " + lockFile + " is held by another process: pid " + strconv.Itoa(os.Getpid()), "do not delete node.lock"},
			"chown", func(stderr string) {
				// the fix: stop the holder (this process lets go of its lock)
				if !strings.Contains(firstWith(stderr, "fix: "), "kill "+strconv.Itoa(os.Getpid())) {
					t.Errorf("the fix does not name the holder's pid:\n%s", stderr)
				}
				held.Close()
			}},
		{"keystore overwritten",
			func() {
				keystoreWas, _ = os.ReadFile(keystore)
				if err := os.WriteFile(keystore, []byte("this is not a keystore, written over it by hand\n"), 0o660); err != nil {
					t.Fatal(err)
				}
			},
			[]string{"the indexer's keystore " + keystore + " is corrupted", "fix: restore " + keystore + " from a backup", "opensearch-keystore create"},
			"act on the lines above", func(string) {
				// the fix: restore it from its backup (the copy taken before the edit)
				if keystoreWas == nil {
					_ = os.Remove(keystore)
					return
				}
				if err := os.WriteFile(keystore, keystoreWas, 0o660); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.make()
			began := time.Now()
			// an admin restarts after the edit (start leaves an active unit alone)
			r := l.Siemctl("services", "restart", "indexer", "--yes")
			t.Logf("%s: services start exit %d after %s: %s | %s", c.name, r.Code, time.Since(began).Round(time.Second), firstWith(r.Stderr, "cause: "), firstWith(r.Stderr, "fix: "))
			if r.Code == 0 || strings.Contains(r.Stderr, "is still starting") {
				t.Errorf("services start: exit %d, want a failure naming the cause:\n%s", r.Code, r.Stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Stderr, w) {
					t.Errorf("services start lacks %q:\n%s", w, r.Stderr)
				}
			}
			if c.never != "" && strings.Contains(firstWith(r.Stderr, "fix: "), c.never) {
				t.Errorf("the fix says %q:\n%s", c.never, r.Stderr)
			}
			c.fix(r.Stderr)
			mustStart(t, start)
		})
	}
	moreFaultsByHand(t, l, httpPort)
}
