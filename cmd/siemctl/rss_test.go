package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cmd/register"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/output"
)

const rssChildEnv = "SIEMCTL_RSS_CHILD_ARGS"

// rssLimitKiB is what the hourly capture and health may use against a
// 50 MB answer (issue 9 item 2: under 150 MB RSS).
const rssLimitKiB = 150 << 10

// TestHelperRSSChild is not a test: run as a subprocess by
// TestHugeAnswerRSS, it runs siemctl with the arguments in its environment.
func TestHelperRSSChild(t *testing.T) {
	args := os.Getenv(rssChildEnv)
	if args == "" {
		t.Skip("helper process only")
	}
	code := cli.Main(context.Background(), strings.Split(args, "\x1f"), cli.Stdio{IO: output.System(), Env: os.Environ(), Wire: factory.Wire}, register.All)
	fmt.Fprintf(os.Stderr, "EXIT %d\n", code)
}

// serveHugeJSON streams a valid JSON document of about size bytes without
// holding it.
func serveHugeJSON(size int) http.HandlerFunc {
	chunk := []byte(strings.Repeat(`{"index":"siem-alerts-4.x-2025.01.01","docs.count":"1"},`, 1024))
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"affected_items":[`))
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`{}],"total_affected_items":1}, "error": 0}`))
	}
}

// TestHugeAnswerRSS runs `snapshot capture` and `health` in a child process
// against an indexer whose every answer, and a manager whose agent listing,
// is a 50 MB JSON document, and measures the child's peak RSS (getrusage).
// The run must stay under 150 MB and name the answer that was too large.
func TestHugeAnswerRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 50 MB answers")
	}
	huge := serveHugeJSON(50 << 20)
	idx := httptest.NewServer(huge)
	t.Cleanup(idx.Close)
	mgr := managertest.New(t, managertest.Config{})
	mgr.Handle("GET /agents", huge)
	mgr.Handle("GET /manager/info", huge)
	dash := httptest.NewServer(huge)
	t.Cleanup(dash.Close)

	d := t.TempDir()
	pw := filepath.Join(d, "pw")
	if err := os.WriteFile(pw, []byte(mgr.Password()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(d, "siemctl.yaml")
	body := fmt.Sprintf(`state_dir: %s/state
backup_dir: %s/backup
systemd: {address: "unix:path=%s/no-systemd"}
indexer: {url: %q, password_file: %s, ca_file: ""}
manager: {api_url: %q, username: %s, password_file: %s, install_dir: %s/siem}
dashboard: {url: %q}
shipper: {binary: %s/no-shipper}
`, d, d, d, idx.URL, pw, mgr.URL, mgr.Username(), pw, d, dash.URL, d)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"snapshot", "capture", "--timeout", "60s"}, {"health", "--timeout", "60s"}} {
		t.Run(args[0], func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRSSChild$", "-test.count=1")
			if p := os.Getenv("SIEMCTL_RSS_PROFILE"); p != "" {
				cmd.Args = append(cmd.Args, "-test.memprofile="+p+"-"+args[0], "-test.memprofilerate=65536")
			}
			cmd.Env = append(os.Environ(), rssChildEnv+"="+strings.Join(append(args, "--config", cfg), "\x1f"))
			out, err := cmd.CombinedOutput()
			if cmd.ProcessState == nil {
				t.Fatalf("child did not run: %v", err)
			}
			ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if !ok {
				t.Fatal("no rusage")
			}
			t.Logf("siemctl %s against 50 MB answers: peak RSS %.1f MiB", strings.Join(args, " "), float64(ru.Maxrss)/1024)
			if raceEnabled {
				t.Log("the race detector multiplies memory: peak RSS not asserted")
			} else if ru.Maxrss > rssLimitKiB {
				t.Errorf("peak RSS %d KiB > %d KiB", ru.Maxrss, rssLimitKiB)
			}
			if !strings.Contains(string(out), "answer too large") && !strings.Contains(string(out), "larger than the") {
				t.Errorf("the output does not say which answer was too large:\n%s", tail(string(out), 3000))
			}
			t.Logf("%s", tail(string(out), 1500))
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
