//go:build e2e

package upgrade_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/upgrade"
	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// portOffset: HTTP 9750, transport 9850, API 55550, dashboard 6151. Offsets
// that are multiples of 100 collide (offset N's transport port is offset
// N+100's HTTP port), so this lab sits between them.
const portOffset = 550

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// TestMain removes the binaries built for the e2e tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binaries builds siemctl with the e2e tag (its test hooks: SIEMCTL_TEST_KILL_AT,
// SIEMCTL_TEST_EXEC_AT) and siemlab, once, and points the harness at them.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
		binDir, buildErr = os.MkdirTemp("", "siemctl-upgrade-e2e-bin-")
		if buildErr != nil {
			return
		}
		_ = os.Chmod(binDir, 0o755)
		for _, b := range []struct{ name, pkg, tags string }{{"siemctl", "./cmd/siemctl", "e2e"}, {"siemlab", "./lab/cmd/siemlab", ""}} {
			args := []string{"build", "-o", filepath.Join(binDir, b.name)}
			if b.tags != "" {
				args = append(args, "-tags", b.tags)
			}
			cmd := exec.Command("go", append(args, b.pkg)...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b.name, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	t.Setenv("SIEMCTL_E2E_BIN", binDir)
	return binDir
}

// labClient talks to the lab's indexer directly (test oracle, not siemctl).
type labClient struct {
	base string
	pw   string
	hc   *http.Client
	dir  string
	prof lab.Profile
}

func newLabClient(t *testing.T, dir string) *labClient {
	t.Helper()
	l, err := lab.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pw := labSecret(t, dir, "indexer")
	ca, err := os.ReadFile(filepath.Join(dir, "certs", "root-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &labClient{base: fmt.Sprintf("https://127.0.0.1:%d", l.Ports().Indexer), pw: pw, dir: dir, prof: l.Profile(),
		hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

// get calls the indexer as admin and decodes its 2xx answer into v (nil:
// not read).
func (c *labClient) get(t *testing.T, method, path string, v any) {
	t.Helper()
	c.send(t, method, path, "", "", v)
}

// send is get with a body of content type ctype ("": none).
func (c *labClient) send(t *testing.T, method, path, ctype, body string, v any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", c.pw)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// alertCounts returns docs per alerts index (after a refresh).
func (c *labClient) alertCounts(t *testing.T) map[string]int64 {
	t.Helper()
	c.get(t, http.MethodPost, "/"+c.prof.AlertsPrefix()+"*/_refresh", nil)
	var rows []struct {
		Index string `json:"index"`
		Docs  string `json:"docs.count"`
	}
	c.get(t, http.MethodGet, "/_cat/indices/"+c.prof.AlertsPrefix()+"*?format=json&h=index,docs.count", &rows)
	out := map[string]int64{}
	for _, r := range rows {
		var n int64
		fmt.Sscan(r.Docs, &n)
		out[r.Index] = n
	}
	return out
}

func (c *labClient) openSearchVersion(t *testing.T) string {
	t.Helper()
	var v struct {
		Nodes map[string]struct {
			Version string `json:"version"`
		} `json:"nodes"`
	}
	c.get(t, http.MethodGet, "/_nodes?filter_path=nodes.*.version", &v)
	for _, n := range v.Nodes {
		return n.Version
	}
	t.Fatal("no nodes")
	return ""
}

func (c *labClient) allocation(t *testing.T) string {
	t.Helper()
	var s struct {
		Persistent map[string]string `json:"persistent"`
		Transient  map[string]string `json:"transient"`
	}
	c.get(t, http.MethodGet, "/_cluster/settings?flat_settings=true", &s)
	if v, ok := s.Transient["cluster.routing.allocation.enable"]; ok {
		return v
	}
	if v, ok := s.Persistent["cluster.routing.allocation.enable"]; ok {
		return v
	}
	return "all"
}

// persistent is a persistent cluster setting ("" when unset).
func (c *labClient) persistent(t *testing.T, key string) string {
	t.Helper()
	var s struct {
		Persistent map[string]string `json:"persistent"`
	}
	c.get(t, http.MethodGet, "/_cluster/settings?flat_settings=true", &s)
	return s.Persistent[key]
}

func packageVersions(t *testing.T, dir string) map[string]string {
	t.Helper()
	l, err := lab.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--admindir=" + filepath.Join(dir, "root", "var/lib/dpkg"), "-W", "-f=${Package} ${Version}\n"}, l.Profile().Packages()...)
	out, err := exec.Command("dpkg-query", args...).Output()
	if err != nil {
		t.Fatalf("dpkg-query: %v", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if p, v, ok := strings.Cut(l, " "); ok {
			m[p] = v
		}
	}
	return m
}

// upOld starts a lab at offset (siemctl and siemlab built first) and
// waits for its stack: every package at 4.9.0-1, health OK.
func upOld(t *testing.T, offset int) *e2e.Lab {
	t.Helper()
	binaries(t)
	l := e2e.Up(t, e2e.Options{PortOffset: offset})
	wantPackages(t, l.Dir, "4.9.0-1")
	healthOK(t, l)
	return l
}

func wantPackages(t *testing.T, dir, v string) {
	t.Helper()
	for p, got := range packageVersions(t, dir) {
		if got != v {
			t.Errorf("package %s is %s, want %s", p, got, v)
		}
	}
}

func healthOK(t *testing.T, l *e2e.Lab) {
	t.Helper()
	var last string
	e2e.Eventually(t, 90*time.Second, 3*time.Second, func() error {
		r := l.Siemctl("health", "-o", "json")
		var rep struct {
			Verdict string `json:"verdict"`
			Checks  []struct {
				ID, Status, Summary string
			} `json:"checks"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			return fmt.Errorf("health -o json: %v (%s)", err, r.Stderr)
		}
		if rep.Verdict != "OK" {
			var bad []string
			for _, c := range rep.Checks {
				if c.Status != "OK" {
					bad = append(bad, c.ID+" "+c.Status+": "+c.Summary)
				}
			}
			last = strings.Join(bad, "; ")
			return fmt.Errorf("health verdict %s: %s", rep.Verdict, last)
		}
		return nil
	})
}

// noLoss: every alerts index counted before is there with at least as many documents.
func noLoss(t *testing.T, before, after map[string]int64) {
	t.Helper()
	for idx, n := range before {
		if after[idx] < n {
			t.Errorf("index %s: %d documents, had %d before", idx, after[idx], n)
		}
	}
}

type runStatus struct {
	RunID   string `json:"run_id"`
	Runbook string `json:"runbook"`
	Status  string `json:"status"`
	Time    struct {
		Wall       float64            `json:"wall_s"`
		Components float64            `json:"waiting_on_components_s"`
		Own        float64            `json:"siemctl_own_work_s"`
		Overhead   float64            `json:"overhead_s"`
		ByKind     map[string]float64 `json:"by_kind_s"`
	} `json:"time"`
	Steps []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"steps"`
}

func status(t *testing.T, l *e2e.Lab, args ...string) runStatus {
	t.Helper()
	r := l.Siemctl(append([]string{"upgrade", "status", "-o", "json"}, args...)...)
	var st runStatus
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatalf("upgrade status: %v: %s %s", err, r.Stdout, r.Stderr)
	}
	return st
}

func logTime(t *testing.T, what string, st runStatus) {
	t.Logf("%s run %s %s: wall %.1fs = waiting on components %.1fs + siemctl's own work %.1fs + engine/journal %.1fs; by kind %v",
		what, st.RunID, st.Status, st.Time.Wall, st.Time.Components, st.Time.Own, st.Time.Overhead, round(st.Time.ByKind))
}

func round(m map[string]float64) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v >= 0.05 {
			out[k] = fmt.Sprintf("%.1fs", v)
		}
	}
	return out
}

// siemctlEnv runs siemctl with extra environment (the e2e hooks).
func siemctlEnv(t *testing.T, l *e2e.Lab, env []string, args ...string) e2e.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "siemctl"), args...)
	cmd.Env = append(append(os.Environ(), l.Env...), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	r := e2e.Result{Stdout: o.String(), Stderr: e.String(), Took: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("siemctl: %v", err)
	}
	return r
}

func mustCode(t *testing.T, r e2e.Result, want int, what string) {
	t.Helper()
	if r.Code != want {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.Code, want, tail(r.Stdout, 3000), tail(r.Stderr, 6000))
	}
}

// lines keeps the lines containing any of subs.
func lines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) && !strings.Contains(l, "waiting") {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestE2EUpgradeRollback: the MUST SHOW of the upgrade: 4.9.0-1 → 4.10.0-1 and
// back, SIGKILL in five steps with resume, and a red cluster after the
// indexer upgrade rolled back automatically.
func TestE2EUpgradeRollback(t *testing.T) {
	l := upOld(t, portOffset)
	c := newLabClient(t, l.Dir)
	before := c.alertCounts(t)
	t.Logf("alerts before: %v", before)

	t.Run("plan", func(t *testing.T) {
		r := l.Siemctl("upgrade", "plan", "--to", "4.10.0", "-o", "json")
		mustCode(t, r, 0, "upgrade plan")
		var p struct {
			Verdict string               `json:"verdict"`
			Gates   []upgrade.GateResult `json:"gates"`
			Steps   []map[string]any     `json:"steps"`
			Comps   []map[string]any     `json:"components"`
			Rb      map[string][]any     `json:"rollback"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
			t.Fatal(err)
		}
		if p.Verdict != "GO" || len(p.Gates) < 5 || len(p.Steps) < 40 || len(p.Rb["automatic"]) == 0 || len(p.Rb["explicit"]) == 0 {
			t.Fatalf("plan: %s", r.Stdout)
		}
		// the waits for the primaries get time for each shard the indexer has now
		for _, s := range p.Steps {
			if id := s["id"]; id == "indexer/security" || id == "indexer/health" {
				dl, _ := s["deadline"].(map[string]any)
				if why, _ := dl["why"].(string); !strings.Contains(why, "primary shards, active on the indexer now") || dl["extra_ns"] == nil {
					t.Errorf("%s: deadline %v", id, s["deadline"])
				}
			}
		}
	})

	t.Run("apply", func(t *testing.T) {
		r := l.Siemctl("upgrade", "apply", "--to", "4.10.0", "--yes")
		mustCode(t, r, 0, "upgrade apply")
		if !strings.Contains(r.Stderr, "indexer/allocation-primaries ok") || !strings.Contains(r.Stdout, "succeeded") {
			t.Errorf("progress/report missing:\n%s\n%s", r.Stderr, r.Stdout)
		}
		if !strings.Contains(r.Stderr, "primary shards, counted before the indexer stopped") {
			t.Errorf("the waits for the primaries show no deadline from the count:\n%s", lines(r.Stderr, "indexer/recoveries-up", "indexer/security", "indexer/health"))
		}
		wantPackages(t, l.Dir, "4.10.0-1")
		if v := c.openSearchVersion(t); v != "2.19.3" {
			t.Errorf("OpenSearch %s after the upgrade, want 2.19.3", v)
		}
		healthOK(t, l)
		if r := l.Siemctl("alerts", "probe"); r.Code != 0 {
			t.Errorf("alerts probe after the upgrade: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		noLoss(t, before, c.alertCounts(t))
		if a := c.allocation(t); a != "all" {
			t.Errorf("allocation %s after the upgrade", a)
		}
		logTime(t, "upgrade", status(t, l))
		checkReportInBrowser(t, l)
	})

	t.Run("rollback", func(t *testing.T) {
		r := l.Siemctl("rollback", "--yes")
		mustCode(t, r, 0, "rollback")
		wantPackages(t, l.Dir, "4.9.0-1")
		if v := c.openSearchVersion(t); v != "2.11.1" {
			t.Errorf("OpenSearch %s after the rollback, want 2.11.1", v)
		}
		healthOK(t, l)
		noLoss(t, before, c.alertCounts(t))
		logTime(t, "rollback", status(t, l))
		// The rollback's waits for the primaries use the count the upgrade took before its stop, and
		// the recovery setting the data copy carries (raised before it was taken) is put back.
		if !strings.Contains(r.Stderr, "primary shards, counted before the indexer stopped") || !strings.Contains(r.Stderr, "indexer/recoveries-back ok") {
			t.Errorf("rollback progress:\n%s", lines(r.Stderr, "indexer/security", "indexer/health", "recoveries-back"))
		}
		if v := c.persistent(t, "cluster.routing.allocation.node_initial_primaries_recoveries"); v != "" {
			t.Errorf("node_initial_primaries_recoveries %s after the rollback, unset before the upgrade", v)
		}
	})

	// SIGKILL in the middle of five different steps; resume finishes each time.
	kills := []struct{ name, at string }{
		{"after-allocation-primaries", "indexer/allocation-primaries@step-ok"},
		{"during-indexer-install", "indexer/install+300ms"},
		{"during-security-backup", "backup/indexer-security+3s"},
		{"during-indexer-security-apply", "indexer/security+8s"},
		{"during-manager-install", "manager/install+300ms"},
		{"before-data-flow-probe", "validate/data-flow"},
	}
	for _, k := range kills {
		t.Run("kill/"+k.name, func(t *testing.T) {
			r := siemctlEnv(t, l, []string{"SIEMCTL_TEST_KILL_AT=" + k.at}, "upgrade", "apply", "--to", "4.10.0", "--yes")
			if r.Code == 0 || r.Code == 10 || r.Code == 11 {
				t.Fatalf("apply with SIEMCTL_TEST_KILL_AT=%s exited %d: not killed\n%s", k.at, r.Code, tail(r.Stderr, 3000))
			}
			st := status(t, l)
			if st.Status != engine.StatusInterrupted {
				t.Fatalf("after the kill the run is %s, want interrupted", st.Status)
			}
			r = l.Siemctl("upgrade", "resume", "--yes")
			mustCode(t, r, 0, "upgrade resume after kill at "+k.at)
			if !strings.Contains(r.Stderr, "resumed:") && !strings.Contains(r.Stderr, "skipped") {
				t.Logf("resume progress:\n%s", tail(r.Stderr, 2000))
			}
			wantPackages(t, l.Dir, "4.10.0-1")
			if a := c.allocation(t); a != "all" {
				t.Errorf("allocation %s after resume", a)
			}
			healthOK(t, l)
			noLoss(t, before, c.alertCounts(t))
			st = status(t, l)
			if st.Status != engine.StatusSucceeded {
				t.Fatalf("resumed run %s", st.Status)
			}
			logTime(t, "resumed upgrade ("+k.at+")", st)
			mustCode(t, l.Siemctl("rollback", "--yes"), 0, "rollback after the resumed upgrade")
			wantPackages(t, l.Dir, "4.9.0-1")
			healthOK(t, l)
		})
	}

	t.Run("red-cluster-rolls-back", func(t *testing.T) {
		fault := fmt.Sprintf("%s fault --dir %s cluster-red", filepath.Join(binDir, "siemlab"), l.Dir)
		r := siemctlEnv(t, l, []string{"SIEMCTL_TEST_EXEC_AT=indexer/health=" + fault}, "upgrade", "apply", "--to", "4.10.0", "--yes")
		mustCode(t, r, 10, "apply with a red cluster after the indexer upgrade")
		if !strings.Contains(r.Stderr, "indexer/health FAILED") || !strings.Contains(r.Stderr, "cannot be allocated") {
			t.Errorf("the gate did not say no-go for the red cluster:\n%s", tail(r.Stderr, 4000))
		}
		t.Logf("automatic rollback:\n%s", lines(r.Stderr, "indexer/health", "undo ", "run "))
		st := status(t, l)
		if st.Status != engine.StatusRolledBack {
			t.Errorf("run %s, want rolled-back", st.Status)
		}
		logTime(t, "auto-rollback", st)
		l.Siemlab("heal", "cluster-red") // bookkeeping: the restored data has no red index
		wantPackages(t, l.Dir, "4.9.0-1")
		if v := c.openSearchVersion(t); v != "2.11.1" {
			t.Errorf("OpenSearch %s after the automatic rollback, want 2.11.1", v)
		}
		healthOK(t, l)
		noLoss(t, before, c.alertCounts(t))
	})
}
