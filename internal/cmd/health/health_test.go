package health_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cmd/register"
	"github.com/siemctl/siemctl/internal/output"
)

const secret = "S3cret-Do-Not-Print-9f2c"

type report struct {
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
	Checks   []struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Summary string `json:"summary"`
		Fix     string `json:"fix"`
	} `json:"checks"`
}

// writeConfig points every component at addr (host:port base) and returns the
// config path.
func writeConfig(t *testing.T, indexer, mgr, dash, sysd string) string {
	t.Helper()
	d := t.TempDir()
	pw := filepath.Join(d, "pw")
	if err := os.WriteFile(pw, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := "state_dir: " + d + "/state\n" +
		"systemd: {address: \"unix:path=" + sysd + "\"}\n" +
		"indexer: {url: \"https://" + indexer + "\", password_file: " + pw + ", ca_file: \"\"}\n" +
		"manager: {api_url: \"https://" + mgr + "\", password_file: " + pw + ", install_dir: " + d + "/siem, syslog: \"udp://127.0.0.1:9\"}\n" +
		"dashboard: {url: \"https://" + dash + "\"}\n" +
		"shipper: {binary: " + d + "/shipper}\n"
	p := filepath.Join(d, "siemctl.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// blackhole accepts connections and never answers.
func blackhole(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// blackholeUnix is a unix socket that accepts and never answers (a hung systemd).
func blackholeUnix(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "private")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return p
}

func runHealth(t *testing.T, cfg string, args ...string) (report, string, int, time.Duration) {
	t.Helper()
	io, _, out, errOut := output.Test()
	start := time.Now()
	code := cli.Main(context.Background(), append([]string{"health", "--config", cfg}, args...), cli.Stdio{IO: io, Env: []string{}}, register.All)
	took := time.Since(start)
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s\nstderr: %s", err, out.String(), errOut.String())
	}
	all := out.String() + errOut.String()
	return rep, all, code, took
}

func TestHealthAgainstDeadAndBlackholedStack(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(t *testing.T) string
	}{
		{"ports closed", func(t *testing.T) string {
			return writeConfig(t, closedAddr(t), closedAddr(t), closedAddr(t), filepath.Join(t.TempDir(), "nosock"))
		}},
		{"blackholed", func(t *testing.T) string {
			return writeConfig(t, blackhole(t), blackhole(t), blackhole(t), blackholeUnix(t))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deadline := time.Second
			rep, all, code, took := runHealth(t, tt.cfg(t), "-o", "json", "--timeout", deadline.String())
			if code != 2 || rep.ExitCode != 2 || rep.Verdict != "CRIT" {
				t.Errorf("exit %d, verdict %s (%d), want 2/CRIT", code, rep.Verdict, rep.ExitCode)
			}
			want := map[string]bool{}
			for _, id := range []string{"units", "ports", "indexer.api", "indexer.health", "indexer.allocation", "indexer.shards", "indexer.disk", "indexer.templates", "manager.api", "manager.config", "versions", "agents", "alerts.flow", "dashboard", "shipper", "certs", "secrets"} {
				want[id] = true
			}
			for _, c := range rep.Checks {
				if c.Status == "OK" {
					t.Errorf("%s is OK on a dead stack: %s", c.ID, c.Summary)
				}
				delete(want, c.ID)
			}
			if len(want) > 0 {
				t.Errorf("missing checks: %v", want)
			}
			if strings.Contains(all, secret) {
				t.Error("the password reached the output")
			}
			// Hang detector, not a performance assertion: the benchmark
			// measures the real overhead.
			if took > 20*deadline {
				t.Errorf("health took %s with a %s deadline", took, deadline)
			}
		})
	}
}

func TestNewCmdHealthFlags(t *testing.T) {
	cfg := writeConfig(t, closedAddr(t), closedAddr(t), closedAddr(t), "/nonexistent")
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--check", "nope"}, 2, "unknown check id nope"},
		{[]string{"-o", "yaml"}, 2, "-o yaml is not supported"},
		{[]string{"--textfile", "/tmp/x.prom"}, 2, "--textfile needs -o prometheus"},
		{[]string{"--timeout", "0s"}, 2, `invalid duration "0s": must be more than zero`},
	}
	for _, tt := range tests {
		io, _, _, errOut := output.Test()
		code := cli.Main(context.Background(), append([]string{"health", "--config", cfg}, tt.args...), cli.Stdio{IO: io}, register.All)
		if code != tt.code || !strings.Contains(errOut.String(), tt.msg) {
			t.Errorf("%v: exit %d %q, want %d %q", tt.args, code, errOut.String(), tt.code, tt.msg)
		}
	}
}

// A server that echoes the credentials (header, base64, body) must not get
// them printed; and a plain-word password ("wazuh") must not garble paths
// and names that contain it.
func TestHealthRedactsEchoesWithoutGarbling(t *testing.T) {
	const pw = "wazuh"
	basic := base64.StdEncoding.EncodeToString([]byte("admin:" + pw))
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"reason":"bad credentials %s for %s; Authorization: %s; request {\"password\":\"%s\"}"},"status":401}`,
			basic, r.URL.Path, r.Header.Get("Authorization"), pw)
	}
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	d := t.TempDir()
	pwFile := filepath.Join(d, "pw")
	os.WriteFile(pwFile, []byte(pw+"\n"), 0o600)
	missingCA := filepath.Join(d, "etc/wazuh-indexer/certs/root-ca.pem")
	host := strings.TrimPrefix(srv.URL, "http://")
	cfg := "state_dir: " + d + "/state\n" +
		"systemd: {address: \"unix:path=" + blackholeUnix(t) + "\"}\n" +
		"indexer: {url: \"http://" + host + "\", password_file: " + pwFile + ", ca_file: \"\"}\n" +
		"manager: {api_url: \"https://" + closedAddr(t) + "\", password_file: " + pwFile + ", ca_file: " + missingCA + ", install_dir: " + d + "/siem, syslog: \"udp://127.0.0.1:9\"}\n" +
		"dashboard: {url: \"https://" + closedAddr(t) + "\"}\n" +
		"shipper: {binary: " + d + "/shipper}\n"
	p := filepath.Join(d, "siemctl.yaml")
	os.WriteFile(p, []byte(cfg), 0o600)
	_, all, _, _ := runHealth(t, p, "-o", "json", "--check", "indexer.api", "--check", "manager.api", "--timeout", "2s")
	for _, leak := range []string{basic, "password\":\"" + pw, "credentials " + basic} {
		if strings.Contains(all, leak) {
			t.Errorf("output holds %q:\n%s", leak, all)
		}
	}
	if strings.Contains(all, "[redacted]-indexer") || !strings.Contains(all, "/etc/wazuh-indexer/certs/root-ca.pem") {
		t.Errorf("the CA path is garbled or missing:\n%s", all)
	}
	if !strings.Contains(all, "[redacted]") {
		t.Errorf("nothing redacted: the server's echo did not reach the output:\n%s", all)
	}
}
