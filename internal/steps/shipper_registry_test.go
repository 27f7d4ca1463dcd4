package steps_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/units/unitstest"
)

// Filebeat 7.10's registry: meta.json, the log of operations, the active checkpoint and its file.
func writeRegistry(t *testing.T, reg, offset string, checkpoint string) {
	t.Helper()
	writeFile(t, filepath.Join(reg, "filebeat/meta.json"), `{"version":"1"}`, 0o600)
	writeFile(t, filepath.Join(reg, "filebeat/log.json"), `{"op":"set","id":1}
{"k":"filebeat::logs::native::1-2","v":{"offset":`+offset+`,"source":"/var/siem/logs/alerts/alerts.json"}}
`, 0o600)
	writeFile(t, filepath.Join(reg, "filebeat/active.dat"), filepath.Join(reg, "filebeat", checkpoint), 0o600)
	writeFile(t, filepath.Join(reg, "filebeat", checkpoint), `[{"_key":"filebeat::logs::native::1-2","offset":`+offset+`}]`, 0o600)
}

func TestShipperRegistrySavedAndRestored(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "var/lib/shipper")
	reg := filepath.Join(data, "registry")
	writeRegistry(t, reg, "4096", "1200.json")
	cfg := testConfig(t, "shipper:\n  data_dir: "+data+"\n")
	u := newUnits(true)
	d := depsWith(cfg, u)
	e := newEnv(d, nil)

	// Filebeat writes its registry while it runs: not saved then.
	if _, err := run(t, d, e, "backup.shipper_registry", nil); err == nil || !strings.Contains(err.Error(), "shipper.service is active") {
		t.Fatalf("backup with the shipper running: %v", err)
	}
	u.Set(unitstest.Dead("shipper.service"))
	out, err := run(t, d, e, "backup.shipper_registry", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := backupsOf(t, e)
	if b.ShipperRegistry == "" || !strings.Contains(out.Message, "4 files") {
		t.Fatalf("backup: %q %+v", out.Message, b)
	}
	if out, err := run(t, d, e, "backup.shipper_registry", nil); err != nil || !strings.HasPrefix(out.Message, "SKIPPED") {
		t.Fatalf("second backup: %q %v", out.Message, err)
	}

	// The new version ships on: a later offset and a newer checkpoint file, which Filebeat would
	// prefer over a restored older one if it were left in the directory.
	writeRegistry(t, reg, "999999", "5000.json")
	u.Set(unitstest.Running("shipper.service"))
	if _, err := run(t, d, e, "restore.shipper_registry", nil); err == nil || !strings.Contains(err.Error(), "only while the shipper is stopped (siemctl services stop shipper)") {
		t.Fatalf("restore with the shipper running: %v", err)
	}
	if got := readFile(t, filepath.Join(reg, "filebeat/log.json")); !strings.Contains(got, "999999") {
		t.Fatal("a refused restore changed the registry")
	}
	u.Set(unitstest.Dead("shipper.service"))
	out, err = run(t, d, e, "restore.shipper_registry", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(reg, "filebeat/log.json")); !strings.Contains(got, `"offset":4096`) {
		t.Fatalf("restored log.json %q (%s)", got, out.Message)
	}
	if _, err := os.Lstat(filepath.Join(reg, "filebeat/5000.json")); !os.IsNotExist(err) {
		t.Fatalf("the new version's checkpoint is still in the restored registry: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(reg, "filebeat/1200.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored checkpoint: %v", err)
	}
	if m, _ := filepath.Glob(reg + ".siemctl-*"); len(m) != 0 {
		t.Fatalf("left aside: %v", m)
	}

	// A damaged archive is refused before the registry is touched.
	writeRegistry(t, reg, "777", "6000.json")
	f, err := os.OpenFile(b.ShipperRegistry, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("garbage")
	f.Close()
	if _, err := run(t, d, e, "restore.shipper_registry", nil); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged archive: %v", err)
	}
	if got := readFile(t, filepath.Join(reg, "filebeat/log.json")); !strings.Contains(got, `"offset":777`) {
		t.Fatal("a damaged archive changed the registry")
	}
}

// A shipper that never ran has no registry: the rollback removes the one the new version wrote, so
// the old version reads the alerts file from the start (the restored data holds none of it).
func TestShipperRegistryAbsent(t *testing.T) {
	data := filepath.Join(t.TempDir(), "var/lib/shipper")
	cfg := testConfig(t, "shipper:\n  data_dir: "+data+"\n")
	u := newUnits(false)
	d := depsWith(cfg, u)
	e := newEnv(d, nil)
	out, err := run(t, d, e, "backup.shipper_registry", nil)
	if err != nil || !strings.Contains(out.Message, "does not exist") || !backupsOf(t, e).ShipperRegistryAbsent {
		t.Fatalf("backup without a registry: %q %v", out.Message, err)
	}
	writeRegistry(t, filepath.Join(data, "registry"), "12", "1.json")
	if _, err := run(t, d, e, "restore.shipper_registry", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(data, "registry")); !os.IsNotExist(err) {
		t.Fatalf("registry after the restore: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(data, "registry.siemctl-*")); len(m) != 0 {
		t.Fatalf("left aside: %v", m)
	}
}

// A run that saved nothing (an upgrade by an older siemctl) leaves the registry alone and says so.
func TestShipperRegistryNotSaved(t *testing.T) {
	data := filepath.Join(t.TempDir(), "var/lib/shipper")
	writeRegistry(t, filepath.Join(data, "registry"), "12", "1.json")
	cfg := testConfig(t, "shipper:\n  data_dir: "+data+"\n")
	d := depsWith(cfg, newUnits(false))
	out, err := run(t, d, newEnv(d, nil), "restore.shipper_registry", nil)
	if err != nil || !strings.Contains(out.Message, "saved no shipper registry") {
		t.Fatalf("%q %v", out.Message, err)
	}
	if got := readFile(t, filepath.Join(data, "registry/filebeat/log.json")); !strings.Contains(got, `"offset":12`) {
		t.Fatal("registry changed")
	}
}
