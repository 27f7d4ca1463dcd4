package health_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/cmd/register"
)

const secret = "S3cret-Do-Not-Print-9f2c"

// report is `health -o json` (the e2e tests read the evidence too).
type report struct {
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
	Checks   []struct {
		ID       string   `json:"id"`
		Status   string   `json:"status"`
		Summary  string   `json:"summary"`
		Evidence []string `json:"evidence"`
		Fix      string   `json:"fix"`
	} `json:"checks"`
}

// writeConfig points the components at the given host:port addresses (https)
// and systemd at the socket sysd, and returns the config path.
func writeConfig(t *testing.T, indexer, mgr, dash, sysd string) string {
	t.Helper()
	d := t.TempDir()
	pw := clitest.WriteSecret(t, d, "pw", secret)
	return clitest.WriteConfig(t, d, "state_dir: "+d+"/state\n"+
		"systemd: {address: \"unix:path="+sysd+"\"}\n"+
		"indexer: {url: \"https://"+indexer+"\", password_file: "+pw+", ca_file: \"\"}\n"+
		"manager: {api_url: \"https://"+mgr+"\", password_file: "+pw+", install_dir: "+d+"/siem, syslog: \"udp://127.0.0.1:9\"}\n"+
		"dashboard: {url: \"https://"+dash+"\"}\n"+
		"shipper: {binary: "+d+"/shipper}\n")
}

// blackhole accepts connections and never answers.
func blackhole(t *testing.T) string { return clitest.Hang(t, "tcp").Addr }

func runHealth(t *testing.T, cfg string, args ...string) (report, string, int, time.Duration) {
	t.Helper()
	start := time.Now()
	r := clitest.Main(context.Background(), register.All, false, "", append([]string{"health", "--config", cfg}, args...)...)
	took := time.Since(start)
	var rep report
	if err := json.Unmarshal([]byte(r.Out), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s\nstderr: %s", err, r.Out, r.ErrOut)
	}
	return rep, r.Out + r.ErrOut, r.Code, took
}

func TestHealthAgainstDeadAndBlackholedStack(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(t *testing.T) string
	}{
		{"ports closed", func(t *testing.T) string {
			return writeConfig(t, clitest.ClosedAddr(t), clitest.ClosedAddr(t), clitest.ClosedAddr(t), filepath.Join(t.TempDir(), "nosock"))
		}},
		{"blackholed", func(t *testing.T) string {
			return writeConfig(t, blackhole(t), blackhole(t), blackhole(t), clitest.Hang(t, "unix").Addr)
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
			clitest.NoSecret(t, "the output", all, secret)
			// Hang detector, not a performance assertion: the benchmark
			// measures the real overhead.
			if took > 20*deadline {
				t.Errorf("health took %s with a %s deadline", took, deadline)
			}
		})
	}
}

func TestNewCmdHealthFlags(t *testing.T) {
	cfg := writeConfig(t, clitest.ClosedAddr(t), clitest.ClosedAddr(t), clitest.ClosedAddr(t), "/nonexistent")
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
		r := clitest.Main(context.Background(), register.All, false, "", append([]string{"health", "--config", cfg}, tt.args...)...)
		if r.Code != tt.code || !strings.Contains(r.ErrOut, tt.msg) {
			t.Errorf("%v: exit %d %q, want %d %q", tt.args, r.Code, r.ErrOut, tt.code, tt.msg)
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
	pwFile := clitest.WriteSecret(t, d, "pw", pw)
	missingCA := filepath.Join(d, "etc/wazuh-indexer/certs/root-ca.pem")
	host := strings.TrimPrefix(srv.URL, "http://")
	p := clitest.WriteConfig(t, d, "state_dir: "+d+"/state\n"+
		"systemd: {address: \"unix:path="+clitest.Hang(t, "unix").Addr+"\"}\n"+
		"indexer: {url: \"http://"+host+"\", password_file: "+pwFile+", ca_file: \"\"}\n"+
		"manager: {api_url: \"https://"+clitest.ClosedAddr(t)+"\", password_file: "+pwFile+", ca_file: "+missingCA+", install_dir: "+d+"/siem, syslog: \"udp://127.0.0.1:9\"}\n"+
		"dashboard: {url: \"https://"+clitest.ClosedAddr(t)+"\"}\n"+
		"shipper: {binary: "+d+"/shipper}\n")
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
