package steps_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/shipper"
)

// registryFixture writes a Filebeat 7.10 registry as the lab's real Filebeat writes it (an active
// checkpoint, then log.json transactions) tracking alerts, an alerts file of n alerts one second
// apart from t0, read to its end.
func registryFixture(t *testing.T, n int, t0 time.Time) (dir, alerts string, lines []string) {
	t.Helper()
	root := t.TempDir()
	alerts = filepath.Join(root, "alerts.json")
	var b strings.Builder
	for i := range n {
		line := fmt.Sprintf(`{"timestamp":"%s","rule":{"level":5,"id":"5710"},"id":"%d","full_log":"sshd: invalid user flow-%04d"}`,
			t0.Add(time.Duration(i)*time.Second).Format("2006-01-02T15:04:05.000-0700"), 1700000000+i, i)
		lines = append(lines, line)
		b.WriteString(line + "\n")
	}
	if err := os.WriteFile(alerts, []byte(b.String()), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(alerts)
	ino := fi.Sys().(*syscall.Stat_t).Ino
	dir = filepath.Join(root, "registry", "filebeat")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("filebeat::logs::native::%d-65024", ino)
	state := func(off int) string {
		return fmt.Sprintf(`{"ttl":-1,"type":"log","FileStateOS":{"inode":%d,"device":65024},"identifier_name":"native","id":"native::%d-65024","offset":%d,"prev_id":"","source":%q,"timestamp":[467881443,1796665906]}`, ino, ino, off, alerts)
	}
	checkpoint := filepath.Join(dir, "17.json")
	cp := fmt.Sprintf(`[{"_key":%q,%s]`, key, strings.TrimPrefix(state(100), "{"))
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(checkpoint, []byte(cp), 0o600))
	must(os.WriteFile(filepath.Join(dir, "active.dat"), []byte(checkpoint), 0o600))
	must(os.WriteFile(filepath.Join(dir, "meta.json"), []byte(`{"version":"1"}`), 0o600))
	log := fmt.Sprintf("{\"op\":\"set\",\"id\":16}\n{\"k\":%q,\"v\":%s}\n{\"op\":\"set\",\"id\":18}\n{\"k\":%q,\"v\":%s}\n{\"op\":\"set\",\"id\":19}\n{\"k\":%q,\"v\":%s}\n",
		key, state(50), key, state(200), key, state(b.Len()))
	must(os.WriteFile(filepath.Join(dir, "log.json"), []byte(log), 0o600))
	return dir, alerts, lines
}

// TestRewindRegistry: the alerts file's read position goes back to the first alert at or after the
// cutoff, as one transaction with the next id (checkpoint 17, log up to 19: 20), the state otherwise
// as it was; read again it is the new position; never forward; a rotated file is left alone.
func TestRewindRegistry(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 17, 30, 0, 0, time.UTC)
	dir, alerts, lines := registryFixture(t, 20, t0)
	res, err := shipper.RewindRegistry(dir, alerts, t0.Add(12*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for _, l := range lines[:12] {
		want += int64(len(l) + 1)
	}
	if res.To != want || res.From <= res.To || !strings.Contains(res.String(), "rewound") {
		t.Fatalf("rewound %+v, want to %d", res, want)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "log.json"))
	tail := strings.Split(strings.TrimSpace(string(data)), "\n")
	if tail[len(tail)-2] != `{"id":20,"op":"set"}` || !strings.Contains(tail[len(tail)-1], fmt.Sprintf(`"offset":%d`, want)) ||
		!strings.Contains(tail[len(tail)-1], `"inode":`) || !strings.Contains(tail[len(tail)-1], `"source":"`+alerts+`"`) {
		t.Fatalf("log.json ends with\n%s\n%s", tail[len(tail)-2], tail[len(tail)-1])
	}
	// a later cutoff does not move it forward
	if res, err := shipper.RewindRegistry(dir, alerts, t0.Add(18*time.Second)); err != nil || res.To != want || res.From != want {
		t.Fatalf("a later cutoff: %+v %v", res, err)
	}
	// the alerts file rotated since: no state for it
	if err := os.Rename(alerts, alerts+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alerts, []byte(lines[0]+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if res, err := shipper.RewindRegistry(dir, alerts, t0); err != nil || !strings.Contains(res.Why, "rotated") {
		t.Fatalf("rotated: %+v %v", res, err)
	}
	// a gap in the transactions: left to the shipper
	f, _ := os.OpenFile(filepath.Join(dir, "log.json"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"op\":\"remove\",\"id\":30}\n{\"k\":\"x\"}\n")
	f.Close()
	if _, err := shipper.RewindRegistry(dir, alerts, t0); err == nil || !strings.Contains(err.Error(), "transaction 30 after 20") {
		t.Fatalf("a gap: %v", err)
	}
}

// TestShipperRegistryRewindStep: the rollback turn's shipper/rewind reads the run's start from this
// host's copy of the record and rewinds the registry under shipper.data_dir (shipper stopped); with
// the shipper running it refuses; without a copy it says the alerts are not sent again, and goes on.
func TestShipperRegistryRewindStep(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 17, 30, 0, 0, time.UTC)
	dir, alerts, _ := registryFixture(t, 300, t0)
	install := t.TempDir()
	if err := os.MkdirAll(filepath.Join(install, "logs", "alerts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(alerts, filepath.Join(install, "logs", "alerts", "alerts.json")); err != nil {
		t.Fatal(err)
	}
	// the registry's source follows the file (the fixture wrote the old path)
	for _, f := range []string{"log.json", "17.json"} {
		p := filepath.Join(dir, f)
		b, _ := os.ReadFile(p)
		_ = os.WriteFile(p, []byte(strings.ReplaceAll(string(b), alerts, filepath.Join(install, "logs", "alerts", "alerts.json"))), 0o600)
	}
	cfg := testConfig(t, fmt.Sprintf("components: [manager, shipper]\nshipper:\n  data_dir: %s\nmanager:\n  install_dir: %s\n", filepath.Dir(filepath.Dir(dir)), install))
	d := depsWith(cfg, newUnits(false))
	if out, err := run(t, d, newEnv(d, nil), "shipper.registry_rewind", nil); err != nil || !strings.Contains(out.Message, "not rewound") {
		t.Fatalf("without a copy of the record: %q %v", out.Message, err)
	}
	rec := rollout.Record{RunID: "20261207T173000Z-abc123", Target: "4.10.0", Phase: rollout.PhaseRollingBack, Created: t0.Add(2 * time.Minute)}
	if err := rollout.SaveCopy(cfg.StateDir, rec); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, d, newEnv(d, nil), "shipper.registry_rewind", nil)
	if err != nil || !strings.Contains(out.Message, "shipper registry rewound") || !strings.Contains(out.Message, "since 2026-12-07T17:31:00Z") {
		t.Fatalf("= %q %v", out.Message, err)
	}
	running := depsWith(cfg, newUnits(true))
	if _, err := run(t, running, newEnv(running, nil), "shipper.registry_rewind", nil); err == nil || !strings.Contains(err.Error(), "siemctl services stop shipper") {
		t.Fatalf("shipper running: %v", err)
	}
}
