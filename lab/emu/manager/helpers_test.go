package manager

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2025, 3, 2, 9, 31, 7, 412_000_000, time.UTC)

// newHome creates an install directory with the packaged files and n seeded agents.
func newHome(t *testing.T, n int) Home {
	t.Helper()
	h := Home{Dir: filepath.Join(t.TempDir(), "var", "siem")}
	write := func(rel string, data []byte) {
		p := h.Path(rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("VERSION", []byte("v4.9.0\n"))
	write("REVISION", []byte("40907\n"))
	write("etc/ossec.conf", DefaultOssecConf(1514, 1515, 5514))
	write("api/configuration/api.yaml", DefaultAPIYAML("127.0.0.1", 55000))
	write("etc/rules/local_rules.xml", []byte(`<group name="local,syslog,sshd,">
  <rule id="100001" level="5">
    <if_sid>5716</if_sid>
    <srcip>1.1.1.1</srcip>
    <description>sshd: authentication failed from IP 1.1.1.1.</description>
    <group>authentication_failed,pci_dss_10.2.4,pci_dss_10.2.5,</group>
  </rule>
  <rule id="100100" level="7">
    <program_name>^siemctl-probe$</program_name>
    <description>siemctl probe event.</description>
    <group>probe,</group>
  </rule>
</group>
`))
	if err := Seed(h, n, false, testNow); err != nil {
		t.Fatal(err)
	}
	if err := NewUserStore(h).EnsureDefaults(); err != nil {
		t.Fatal(err)
	}
	return h
}

// markRunning writes pidfiles for this (live) test process so the basic daemons read as running.
func markRunning(t *testing.T, h Home) {
	t.Helper()
	if err := writePidfiles(h, runningDaemons(nil), os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

type apiFixture struct {
	t    *testing.T
	home Home
	srv  *httptest.Server
	api  *APIServer
	now  time.Time
	fdir string
}

func newAPI(t *testing.T, agents int, mut func(*APIOptions)) *apiFixture {
	t.Helper()
	h := newHome(t, agents)
	markRunning(t, h)
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &apiFixture{t: t, home: h, now: testNow, fdir: filepath.Join(t.TempDir(), "faults")}
	conf, err := LoadAPIConfig(h.APIYAML())
	if err != nil {
		t.Fatal(err)
	}
	o := APIOptions{Home: h, Config: conf, Now: func() time.Time { return f.now }, Hostname: "siem01", SignKey: key}
	o.Faults.Dir = f.fdir
	if mut != nil {
		mut(&o)
	}
	f.api = NewAPIServer(o)
	f.srv = httptest.NewServer(f.api)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *apiFixture) do(method, path, token string, body string) (int, http.Header, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (f *apiFixture) login(user, pw string) string {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+"/security/user/authenticate?raw=true", nil)
	req.SetBasicAuth(user, pw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		f.t.Fatalf("login: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

// envelope is the AffectedItemsWazuhResult shape.
type envelope struct {
	Data struct {
		AffectedItems      []json.RawMessage `json:"affected_items"`
		TotalAffectedItems int               `json:"total_affected_items"`
		TotalFailedItems   int               `json:"total_failed_items"`
		FailedItems        []struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			ID []any `json:"id"`
		} `json:"failed_items"`
	} `json:"data"`
	Message string `json:"message"`
	Error   int    `json:"error"`
}

func decodeEnv(t *testing.T, b []byte) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("decode envelope %s: %v", b, err)
	}
	return e
}

// runDaemon writes conf and an api.yaml on a free loopback port into h and runs the daemon on them
// until stop, which stops it and fails the test on a non-zero exit code. A daemon that exits before
// it is ready fails the test with its ossec.log.
func runDaemon(t *testing.T, h Home, conf []byte, hostname string) (addrs Addrs, stop func()) {
	t.Helper()
	if err := os.WriteFile(h.OssecConf(), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.APIYAML(), DefaultAPIYAML("127.0.0.1", freePort(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Addrs, 1)
	done := make(chan int, 1)
	go func() {
		done <- RunDaemon(ctx, DaemonOptions{Home: h, Hostname: hostname, Ready: func(a Addrs) { ready <- a }, FaultsDir: filepath.Join(t.TempDir(), "f")})
	}()
	select {
	case addrs = <-ready:
	case rc := <-done:
		cancel()
		log, _ := os.ReadFile(h.OssecLog())
		t.Fatalf("daemon exited %d:\n%s", rc, log)
	}
	return addrs, func() {
		cancel()
		if rc := <-done; rc != 0 {
			t.Errorf("daemon exit code %d", rc)
		}
	}
}

// findAlert returns the first alert in alerts.json whose line contains s, or nil.
func findAlert(t *testing.T, h Home, s string) map[string]any {
	t.Helper()
	b, _ := os.ReadFile(h.AlertsJSON())
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, s) {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	return nil
}

// waitAlert waits up to 5 s for findAlert to find an alert containing s (nil if none came).
func waitAlert(t *testing.T, h Home, s string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	m := findAlert(t, h, s)
	for ; m == nil && time.Now().Before(deadline); m = findAlert(t, h, s) {
		time.Sleep(20 * time.Millisecond)
	}
	return m
}
