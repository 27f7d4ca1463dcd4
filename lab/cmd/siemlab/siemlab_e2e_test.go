//go:build e2e

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/shipper"
	"github.com/siemctl/siemctl/lab"
)

// TestMain lets the test binary double as the multi-call binary the emulator packages ship.
func TestMain(m *testing.M) {
	name := filepath.Base(os.Args[0])
	for _, p := range emuPrograms {
		if name == p {
			os.Exit(run(context.Background(), os.Args))
		}
	}
	os.Exit(m.Run())
}

// labDir returns a lab directory in a temp dir the lab's unprivileged indexer user can traverse.
func labDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	if err := lab.OpenParents(base); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(base, "lab")
}

// TestE2EFullLab runs a full up with the emulators, checks the real OpenSearch over TLS with auth,
// the manager API and the dashboard, cluster-red and allocation-primaries faults through the real
// API, the CLI's status, then down, and asserts that no process, cgroup or mount remains.
func TestE2EFullLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := labDir(t)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	shift, err := lab.PortShift()
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Up(ctx, lab.Options{Dir: dir, PortOffset: 800 + shift, Logger: log, Progress: os.Stderr, Emulators: emulators{}, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = l.Down(context.Background())
		}
	})
	p := l.Ports()
	hc := client(t, filepath.Join(dir, "certs", "root-ca.pem"))
	pw := secret(t, dir, "indexer")
	get := func(url, user, pass string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	idx := fmt.Sprintf("https://127.0.0.1:%d", p.Indexer)
	if code, body := get(idx+"/", "admin", pw); code != 200 || !strings.Contains(body, "7.10.2") {
		t.Fatalf("indexer GET / = %d %s", code, body)
	}
	if code, _ := get(idx+"/", "admin", "admin"); code != 401 {
		t.Errorf("indexer with default password = %d, want 401", code)
	}
	if code, body := get(idx+"/_cluster/health", "admin", pw); code != 200 || strings.Contains(body, `"red"`) {
		t.Fatalf("health = %d %s", code, body)
	}
	// Up returned with the stack healthy end to end: an alert is already searchable.
	today := "siem-alerts-4.x-" + time.Now().UTC().Format("2006.01.02")
	if code, body := get(idx+"/"+today+"/_count", "admin", pw); code != 200 || strings.Contains(body, `"count":0`) || l.Timing["first-alert"] <= 0 {
		t.Errorf("right after up: %s = %d %s (first-alert phase %s)", today, code, body, l.Timing["first-alert"])
	}
	if code, _ := get(fmt.Sprintf("https://127.0.0.1:%d/", p.Dashboard), "", ""); code != 302 && code != 200 {
		t.Errorf("dashboard GET / = %d", code)
	}
	// The siemctl config the lab wrote points at the same things (through the profile's defaults,
	// the root and the port offset).
	if cfg, err := config.Load(config.LoadOptions{Path: l.ConfigPath(), ExplicitPath: true}); err != nil || cfg.Manager.APIURL != fmt.Sprintf("https://127.0.0.1:%d", p.API) {
		t.Errorf("siemctl.yaml: %v %+v", err, cfg)
	}

	for _, tc := range []struct{ kind, check, want string }{
		{"cluster-red", "/_cluster/health", `"status":"red"`},
		{"allocation-primaries", "/_cluster/settings", `"enable":"primaries"`},
		{"watermark-override", "/_cluster/settings", `"low":"95%"`},
	} {
		if err := l.Fault(ctx, tc.kind); err != nil {
			t.Fatal(err)
		}
		if _, body := get(idx+tc.check, "admin", pw); !strings.Contains(body, tc.want) {
			t.Errorf("after fault %s: %s lacks %s", tc.kind, body, tc.want)
		}
		if err := l.Heal(ctx, tc.kind); err != nil {
			t.Fatal(err)
		}
		if _, body := get(idx+tc.check, "admin", pw); strings.Contains(body, tc.want) {
			t.Errorf("after heal %s: %s still has %s", tc.kind, body, tc.want)
		}
	}
	// The shipper is the real Filebeat 7.10.2, talking to the real OpenSearch over verified TLS.
	shipperBin := filepath.Join(dir, "root", "usr/bin/shipper")
	shipperConf := filepath.Join(dir, "root", "etc/shipper")
	if out, err := exec.CommandContext(ctx, shipperBin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "filebeat version 7.10.2 ") {
		t.Errorf("shipper version: %v %s", err, out)
	}
	testOutput := func() shipper.Report {
		t.Helper()
		out, _ := exec.CommandContext(ctx, shipperBin, "--path.config", shipperConf, "test", "output").CombinedOutput()
		rep := shipper.ParseTestOutput(string(out))
		t.Logf("test output:\n%s", out)
		return rep
	}
	if rep := testOutput(); !rep.OK || rep.Hosts[0].Version != "7.10.2" || rep.Hosts[0].Info["security"] != "server's certificate chain verification is enabled" {
		t.Errorf("test output = %+v", rep)
	}
	if err := l.Fault(ctx, "shipper-output-unreachable"); err != nil {
		t.Fatal(err)
	}
	if rep := testOutput(); rep.OK || len(rep.Hosts) != 1 || rep.Hosts[0].FirstError() == nil || rep.Hosts[0].FirstError().Name != "dial up" {
		t.Errorf("test output with the output unreachable = %+v", rep)
	}
	if err := l.Heal(ctx, "shipper-output-unreachable"); err != nil {
		t.Fatal(err)
	}
	if rep := testOutput(); !rep.OK {
		t.Errorf("test output after heal = %+v", rep)
	}
	if err := l.Fault(ctx, "shipper-stalled"); err != nil {
		t.Fatal(err)
	}
	if st, err := l.Status(ctx); err == nil {
		for _, u := range st.Units {
			if u.Name == "shipper.service" && u.MainPID > 0 {
				// kill(2) only queues the signal: the process stops when it is next scheduled
				var f []string
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
					stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", u.MainPID))
					if f = strings.Fields(string(stat)); (len(f) >= 3 && f[2] == "T") || time.Now().After(deadline) {
						break
					}
				}
				if len(f) < 3 || f[2] != "T" {
					t.Errorf("shipper-stalled: main PID %d state %v, want T (stopped)", u.MainPID, f)
				}
			}
		}
	}
	if err := l.Heal(ctx, "shipper-stalled"); err != nil {
		t.Fatal(err)
	}

	for _, kind := range []string{"unit-stopped:shipper", "process-killed", "default-password", "manager-config-broken"} {
		if err := l.Fault(ctx, kind); err != nil {
			t.Errorf("fault %s: %v", kind, err)
			continue
		}
		if err := l.Heal(ctx, kind); err != nil {
			t.Errorf("heal %s: %v", kind, err)
		}
	}

	checkLoad(ctx, t, l, idx, pw, hc)
	// Last: the conformance table changes users and agents.
	checkConformance(ctx, t, l, hc)

	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status:\n%s", st)
	for _, u := range st.Units {
		if u.ActiveState != "active" {
			t.Errorf("unit %s %s after heals", u.Name, u.ActiveState)
		}
	}
	for _, port := range st.Ports {
		if !port.Listening {
			t.Errorf("port %s/%d not listening", port.Name, port.Port)
		}
	}
	if st.Versions["siem-manager"] != "4.9.0-1" || st.Versions["siem-indexer"] != "4.9.0-1" {
		t.Errorf("versions = %v", st.Versions)
	}
	t.Logf("memory: %d MiB in %d processes", st.MemoryRSS>>20, st.Processes)

	// down leaves nothing behind.
	cgroups := l.State().Cgroups
	t0 := time.Now()
	if err := lab.DownDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	downed = true
	t.Logf("down took %v", time.Since(t0))
	for _, cg := range cgroups {
		if _, err := os.Stat(cg); err == nil {
			t.Errorf("cgroup %s left", cg)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "lab.json")); err == nil {
		t.Error("lab.json left")
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), dir) {
		t.Error("mount left")
	}
	if err := lab.DownDir(ctx, dir); err != nil {
		t.Errorf("second down: %v", err)
	}
}

func client(t *testing.T, ca string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func secret(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "secrets", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// labState is the state of the lab in dir (lab.json), as siemlab wrote it.
func labState(t *testing.T, dir string) lab.State {
	t.Helper()
	l, err := lab.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l.State()
}
