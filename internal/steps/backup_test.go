package steps_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/testenv"
	"github.com/siemctl/siemctl/internal/units/unitstest"
)

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	testenv.WriteFile(t, path, data, mode)
	if err := os.Chmod(path, mode); err != nil { // exactly mode, whatever the umask
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// victimDir is a directory only root may write (root-only/authorized_keys,
// "victim\n"), the target of the links a restore must never write through.
func victimDir(t *testing.T, root string) string {
	t.Helper()
	victim := filepath.Join(root, "root-only")
	writeFile(t, filepath.Join(victim, "authorized_keys"), "victim\n", 0o600)
	return victim
}

// linkInstead replaces path (a file or a tree) with a symlink to target.
func linkInstead(t *testing.T, path, target string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// roomyDisk is a backup filesystem with room for any copy.
func roomyDisk(string) (steps.DiskUsage, error) {
	return steps.DiskUsage{TotalBytes: 1 << 40, FreeBytes: 1 << 39}, nil
}

// dataDeps are a data copy test's dependencies: the indexer's data_dir at
// data, the units (the indexer active or stopped) and a roomy disk.
func dataDeps(t *testing.T, data string, active bool) (*steps.Deps, *unitstest.Fake, *env) {
	t.Helper()
	u := newUnits(active)
	d := depsWith(testConfig(t, "indexer:\n  data_dir: "+data+"\n"), u)
	d.Disk = roomyDisk
	return d, u, newEnv(d, nil)
}

func backupsOf(t *testing.T, e *env) steps.Backups {
	t.Helper()
	var b steps.Backups
	if _, err := e.Get(rundata.KeyBackups, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConfigsBackupAndRestore(t *testing.T) {
	root := t.TempDir()
	ixConf := filepath.Join(root, "etc/siem-indexer")
	writeFile(t, filepath.Join(ixConf, "opensearch.yml"), "cluster.name: a\n", 0o640)
	writeFile(t, filepath.Join(ixConf, "certs/root-ca.pem"), "CA\n", 0o644)
	writeFile(t, filepath.Join(ixConf, "opensearch-security/internal_users.yml"), "users: old\n", 0o600)
	writeFile(t, filepath.Join(root, "etc/siem-dashboard/opensearch_dashboards.yml"), "server.port: 5601\n", 0o644)
	writeFile(t, filepath.Join(root, "shipper/shipper.yml"), "output: x\n", 0o600)
	cfg := testConfig(t, fmt.Sprintf("indexer:\n  config_dir: %s\n  ca_file: %s/certs/root-ca.pem\ndashboard:\n  config_dir: %s/etc/siem-dashboard\nshipper:\n  config_dir: %s/shipper\nmanager:\n  install_dir: %s/var/siem\n", ixConf, ixConf, root, root, root))
	d := depsWith(cfg, nil)
	e := newEnv(d, nil)
	out, err := run(t, d, e, "backup.configs", map[string]any{"components": []any{"indexer", "dashboard", "shipper", "manager", "certs"}})
	if err != nil {
		t.Fatal(err)
	}
	b := backupsOf(t, e)
	if b.Configs == "" || !strings.Contains(out.Message, "5 files") || !strings.Contains(out.Message, "not present: "+root+"/var/siem/etc") {
		t.Fatalf("backup: %q %+v", out.Message, b)
	}
	if fi, err := os.Stat(filepath.Dir(b.Configs)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("backup dir mode: %v %v", fi.Mode(), err)
	}
	sums := readFile(t, filepath.Join(filepath.Dir(b.Configs), "SHA256SUMS"))
	if !strings.Contains(sums, "  configs.tar.gz") || !strings.Contains(sums, "  configs.manifest.json") {
		t.Fatalf("SHA256SUMS:\n%s", sums)
	}
	// A resumed run does not redo a verified archive.
	if out, err := run(t, d, e, "backup.configs", map[string]any{"components": []any{"indexer"}}); err != nil || !strings.HasPrefix(out.Message, "SKIPPED") {
		t.Fatalf("second backup: %q %v", out.Message, err)
	}

	// The upgrade changes files; the restore puts content and modes back.
	writeFile(t, filepath.Join(ixConf, "opensearch.yml"), "cluster.name: changed-by-the-new-package\n", 0o644)
	if err := os.Remove(filepath.Join(root, "shipper/shipper.yml")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, d, e, "restore.configs", nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(ixConf, "opensearch.yml")); got != "cluster.name: a\n" {
		t.Fatalf("restored content %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(ixConf, "opensearch.yml")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("restored mode %v", fi.Mode())
	}
	if got := readFile(t, filepath.Join(root, "shipper/shipper.yml")); got != "output: x\n" {
		t.Fatalf("restored deleted file %q", got)
	}

	// A damaged archive is refused before anything is written.
	f, err := os.OpenFile(b.Configs, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("garbage")
	f.Close()
	writeFile(t, filepath.Join(ixConf, "opensearch.yml"), "keep me\n", 0o640)
	if _, err := run(t, d, e, "restore.configs", nil); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged archive: %v", err)
	}
	if got := readFile(t, filepath.Join(ixConf, "opensearch.yml")); got != "keep me\n" {
		t.Fatal("a damaged archive changed files")
	}
}

func TestIndexerDataBackupAndRestore(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "var/lib/siem-indexer")
	writeFile(t, filepath.Join(data, "nodes/0/_state/global-1.st"), "state-1", 0o644)
	writeFile(t, filepath.Join(data, "nodes/0/indices/abc/0/index/_0.cfs"), strings.Repeat("x", 100000), 0o644)
	if err := os.Symlink("indices", filepath.Join(data, "nodes/0/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(data, "nodes/0"), 0o750); err != nil {
		t.Fatal(err)
	}
	asRoot := os.Geteuid() == 0
	if asRoot {
		testenv.ChownTree(t, data, 65534, 65534)
	}
	d, u, e := dataDeps(t, data, true)

	// Refused while the indexer runs.
	if _, err := run(t, d, e, "backup.indexer_data", nil); err == nil || !strings.Contains(err.Error(), "only while the indexer is stopped") {
		t.Fatalf("running indexer: %v", err)
	}
	u.Set(unitstest.Dead("siem-indexer.service"))
	// Refused without room.
	d.Disk = func(string) (steps.DiskUsage, error) {
		return steps.DiskUsage{TotalBytes: 1 << 20, FreeBytes: 1000}, nil
	}
	if _, err := run(t, d, e, "backup.indexer_data", nil); err == nil || !strings.Contains(err.Error(), "not enough room") {
		t.Fatalf("no room: %v", err)
	}
	d.Disk = roomyDisk
	out, err := run(t, d, e, "backup.indexer_data", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := backupsOf(t, e)
	if b.IndexerDataN != 2 || b.IndexerDataSize != 100007 || !strings.Contains(out.Message, "verified") {
		t.Fatalf("backup %q %+v", out.Message, b)
	}
	checkCopyMeasures(t, e.takeMeasures(), "copy", 100007)
	// The time budget measures this host's copy rate from the outcome the
	// kind declares (its budget role).
	if r := steps.RoleOf("backup.indexer_data"); r.Measures != steps.RateCopy || out.Data[r.MeasuredBytes] != int64(100007) || r.Phase != "backups" || !r.MovesData {
		t.Fatalf("budget role %+v, outcome data %v", r, out.Data)
	}
	if asRoot {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(b.IndexerData, "nodes/0/_state/global-1.st"), &st); err != nil || st.Uid != 65534 {
			t.Fatalf("owner not kept: uid %d %v", st.Uid, err)
		}
	}
	// Resume: the copy is verified, not redone.
	if out, err := run(t, d, e, "backup.indexer_data", nil); err != nil || !strings.Contains(out.Message, "SKIPPED: copy") {
		t.Fatalf("second backup: %q %v", out.Message, err)
	}

	// The new version rewrites the data; restore brings the copy back (and
	// stops a running indexer first).
	writeFile(t, filepath.Join(data, "nodes/0/_state/global-2.st"), "state-2 of the new version", 0o644)
	if err := os.Remove(filepath.Join(data, "nodes/0/_state/global-1.st")); err != nil {
		t.Fatal(err)
	}
	u.Set(unitstest.Running("siem-indexer.service"))
	if _, err := run(t, d, e, "restore.indexer_data", nil); err != nil {
		t.Fatal(err)
	}
	checkCopyMeasures(t, e.takeMeasures(), "copy back", 100007)
	if got := u.CallsOf("stop"); len(got) != 1 || got[0] != "stop siem-indexer.service" {
		t.Fatalf("ops %v", got)
	}
	if got := readFile(t, filepath.Join(data, "nodes/0/_state/global-1.st")); got != "state-1" {
		t.Fatalf("restored %q", got)
	}
	if _, err := os.Stat(filepath.Join(data, "nodes/0/_state/global-2.st")); !os.IsNotExist(err) {
		t.Fatal("the new version's file survived the restore")
	}
	if fi, err := os.Stat(filepath.Join(data, "nodes/0")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("dir mode %v %v", fi.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(data, "nodes/0/link")); err != nil || l != "indices" {
		t.Fatalf("symlink %q %v", l, err)
	}
	for _, leftover := range []string{data + ".siemctl-restore", data + ".siemctl-replaced"} {
		if _, err := os.Lstat(leftover); !os.IsNotExist(err) {
			t.Fatalf("left %s behind", leftover)
		}
	}
	if out, err := run(t, d, e, "restore.indexer_data", nil); err != nil || !strings.Contains(out.Message, "SKIPPED: the data directory already matches") {
		t.Fatalf("second restore: %q %v", out.Message, err)
	}

	// A copy whose content changed is refused and the data stays.
	writeFile(t, filepath.Join(b.IndexerData, "nodes/0/indices/abc/0/index/_0.cfs"), strings.Repeat("y", 100000), 0o644)
	writeFile(t, filepath.Join(data, "nodes/0/_state/global-2.st"), "new", 0o644)
	if _, err := run(t, d, e, "restore.indexer_data", nil); err == nil || !strings.Contains(err.Error(), "content differs") {
		t.Fatalf("corrupt copy: %v", err)
	}
	if got := readFile(t, filepath.Join(data, "nodes/0/_state/global-2.st")); got != "new" {
		t.Fatal("a corrupt copy replaced the data")
	}
}

// fakeTool writes a securityadmin-like backup into the -backup directory.
type fakeTool struct{ argv [][]string }

func (f *fakeTool) Run(_ context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
	f.argv = append(f.argv, append([]string{name}, args...))
	if len(args) == 2 && args[0] == "--options" {
		fields := strings.Fields(args[1])
		if len(fields) == 4 && fields[0] == "-backup" && fields[2] == "-icl" && fields[3] == "-nhnv" {
			for _, n := range []string{"config.yml", "internal_users.yml", "roles.yml"} {
				if err := os.WriteFile(filepath.Join(fields[1], n), []byte("live "+n), 0o600); err != nil {
					return nil, nil, 1, err
				}
			}
			return []byte("SUCC: Configuration for 'config' stored\n"), nil, 0, nil
		}
		return nil, []byte("bad options"), 1, nil
	}
	return []byte("Done with success\n"), nil, 0, nil
}

func TestSecurityBackupInstallsLiveConfig(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "etc/siem-indexer")
	writeFile(t, filepath.Join(conf, "opensearch-security/internal_users.yml"), "package default", 0o640)
	cfg := testConfig(t, "indexer:\n  config_dir: "+conf+"\n  security_init: [/opt/init.sh]\n")
	tool := &fakeTool{}
	d := depsWith(cfg, nil)
	d.Exec = tool
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "backup.indexer_security", nil); err != nil {
		t.Fatal(err)
	}
	b := backupsOf(t, e)
	if want := filepath.Join(cfg.BackupDir, e.RunID(), "indexer-security"); b.IndexerSecurity != want {
		t.Fatalf("backup at %q, want %q", b.IndexerSecurity, want)
	}
	if got := tool.argv[0]; got[0] != "/opt/init.sh" || got[2] != "-backup "+b.IndexerSecurity+" -icl -nhnv" {
		t.Fatalf("argv %q", got)
	}
	if got := readFile(t, filepath.Join(conf, "opensearch-security/internal_users.yml")); got != "live internal_users.yml" {
		t.Fatalf("config dir not updated: %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(conf, "opensearch-security/internal_users.yml")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode of the existing file changed: %v", fi.Mode())
	}
	sums := readFile(t, filepath.Join(filepath.Dir(b.IndexerSecurity), "SHA256SUMS"))
	if !strings.Contains(sums, "indexer-security/internal_users.yml") {
		t.Fatalf("SHA256SUMS:\n%s", sums)
	}
}

// A service account owns the config and data directories on a real host:
// after the backup it can swap a directory or a file for a symlink into a
// place only root may write. The restore must never write through it.
func TestRestoreNeverFollowsALink(t *testing.T) {
	root := t.TempDir()
	victim := victimDir(t, root)
	ixConf := filepath.Join(root, "etc/siem-indexer")
	writeFile(t, filepath.Join(ixConf, "opensearch.yml"), "cluster.name: a\n", 0o640)
	writeFile(t, filepath.Join(ixConf, "certs/root-ca.pem"), "CA\n", 0o644)
	writeFile(t, filepath.Join(ixConf, "opensearch-security/config.yml"), "config\n", 0o600)
	cfg := testConfig(t, fmt.Sprintf("indexer:\n  config_dir: %s\n", ixConf))
	d := depsWith(cfg, nil)
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "backup.configs", map[string]any{"components": []any{"indexer"}}); err != nil {
		t.Fatal(err)
	}
	victimUntouched := func() {
		t.Helper()
		ents, _ := os.ReadDir(victim)
		if len(ents) != 1 || readFile(t, filepath.Join(victim, "authorized_keys")) != "victim\n" {
			t.Fatalf("the restore wrote through the link: %v", ents)
		}
		if fi, _ := os.Stat(filepath.Join(victim, "authorized_keys")); fi.Mode().Perm() != 0o600 {
			t.Fatalf("the restore changed the mode behind the link: %v", fi.Mode())
		}
		if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o755 {
			t.Fatalf("the restore changed the linked directory's mode: %v", fi.Mode())
		}
	}

	// A directory of the backup replaced by a link: refused, path named.
	certs := filepath.Join(ixConf, "certs")
	linkInstead(t, certs, victim)
	out, err := run(t, d, e, "restore.configs", nil)
	var le *filetree.LinkError
	if err == nil || !errors.As(err, &le) || le.Path != certs || !strings.Contains(err.Error(), certs+" is a symlink now") {
		t.Fatalf("restore through a replaced directory: %q %v", out.Message, err)
	}
	victimUntouched()
	if _, err := os.Stat(filepath.Join(victim, "root-ca.pem")); err == nil {
		t.Fatal("root-ca.pem was written into the link's target")
	}

	// A file replaced by a link: the link is replaced, its target untouched.
	if err := os.Remove(certs); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(ixConf, "opensearch.yml")
	linkInstead(t, conf, filepath.Join(victim, "authorized_keys"))
	if _, err := run(t, d, e, "restore.configs", nil); err != nil {
		t.Fatal(err)
	}
	victimUntouched()
	if fi, err := os.Lstat(conf); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 || readFile(t, conf) != "cluster.name: a\n" {
		t.Fatalf("opensearch.yml not restored as a file: %v %v", fi, err)
	}

	// The security backup copy into opensearch-security: same rule.
	sec := filepath.Join(ixConf, "opensearch-security")
	linkInstead(t, sec, victim)
	d.Exec = &fakeTool{}
	if _, err := run(t, d, e, "backup.indexer_security", nil); err == nil || !errors.As(err, &le) || le.Path != sec {
		t.Fatalf("security copy through a link: %v", err)
	}
	victimUntouched()
}

func TestRestoreDataRefusesALinkedDataDir(t *testing.T) {
	root := t.TempDir()
	victim := victimDir(t, root)
	data := filepath.Join(root, "var/lib/siem-indexer")
	writeFile(t, filepath.Join(data, "nodes/0/_state/global-1.st"), "state-1", 0o644)
	d, _, e := dataDeps(t, data, false)
	if _, err := run(t, d, e, "backup.indexer_data", nil); err != nil {
		t.Fatal(err)
	}
	linkInstead(t, data, victim)
	out, err := run(t, d, e, "restore.indexer_data", nil)
	var le *filetree.LinkError
	if err == nil || !errors.As(err, &le) || le.Path != data {
		t.Fatalf("restore onto a linked data dir: %q %v", out.Message, err)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 1 {
		t.Fatalf("the link's target changed: %v", ents)
	}
	if l, err := os.Readlink(data); err != nil || l != victim {
		t.Fatalf("the link was replaced without a word: %q %v", l, err)
	}
}

// TestWazuhBackupCoversUpgradeGuide: on a stock Wazuh layout the config
// backup holds what Wazuh's upgrade guide backs up — ossec.conf, client.keys,
// local rules and decoders, the API configuration, the indexer's config and
// keystore, opensearch_dashboards.yml and the app's wazuh.yml, filebeat.yml
// and its keystore — and restores them; queue/db is cold-copied with the
// manager stopped (no symlink followed) and restored by swap.
func TestWazuhBackupCoversUpgradeGuide(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"etc/wazuh-indexer/opensearch.yml":                      "cluster.name: wazuh-cluster\n",
		"etc/wazuh-indexer/opensearch.keystore":                 "KEYSTORE",
		"etc/wazuh-indexer/jvm.options":                         "-Xms1g\n",
		"etc/wazuh-dashboard/opensearch_dashboards.yml":         "server.port: 443\n",
		"usr/share/wazuh-dashboard/data/wazuh/config/wazuh.yml": "hosts:\n  - default:\n      url: https://localhost\n",
		"etc/filebeat/filebeat.yml":                             "output.elasticsearch: {}\n",
		"var/lib/filebeat/filebeat.keystore":                    "FBKEYSTORE",
		"var/ossec/etc/ossec.conf":                              "<ossec_config/>\n",
		"var/ossec/etc/client.keys":                             "001 web-01 any KEY\n",
		"var/ossec/etc/rules/local_rules.xml":                   "<group/>\n",
		"var/ossec/etc/decoders/local_decoder.xml":              "<decoder/>\n",
		"var/ossec/api/configuration/api.yaml":                  "https:\n  enabled: yes\n",
		"var/ossec/api/configuration/ssl/server.crt":            "CERT\n",
		"var/ossec/queue/db/global.db":                          "GLOBAL-v1",
		"var/ossec/queue/db/001.db":                             "AGENT-1",
	}
	for p, body := range files {
		writeFile(t, filepath.Join(root, p), body, 0o640)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "var/ossec/queue/db/outside")); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "profile: wazuh\nroot: "+root+"\n")
	u := newUnits(false)
	u.Set(unitstest.Running("wazuh-manager.service"))
	d := depsWith(cfg, u)
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "backup.configs", map[string]any{"components": []any{"indexer", "dashboard", "shipper", "manager", "certs"}}); err != nil {
		t.Fatal(err)
	}
	b := backupsOf(t, e)
	manifest := readFile(t, filepath.Join(filepath.Dir(b.Configs), "configs.manifest.json"))
	for p := range files {
		if strings.Contains(p, "queue/db") {
			if strings.Contains(manifest, p) {
				t.Errorf("%s is in the config archive (it is copied with the manager stopped)", p)
			}
			continue
		}
		if !strings.Contains(manifest, `"`+strings.TrimPrefix(filepath.Join(root, p), "/")+`"`) {
			t.Errorf("%s is not in the config archive", p)
		}
	}
	writeFile(t, filepath.Join(root, "usr/share/wazuh-dashboard/data/wazuh/config/wazuh.yml"), "hosts: []\n", 0o640)
	if err := os.Remove(filepath.Join(root, "var/lib/filebeat/filebeat.keystore")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, d, e, "restore.configs", nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"usr/share/wazuh-dashboard/data/wazuh/config/wazuh.yml", "var/lib/filebeat/filebeat.keystore"} {
		if got := readFile(t, filepath.Join(root, p)); got != files[p] {
			t.Errorf("%s restored as %q", p, got)
		}
	}

	// queue/db: refused while the manager runs, copied once it is stopped.
	if _, err := run(t, d, e, "backup.manager_db", nil); err == nil || !strings.Contains(err.Error(), "only while the manager is stopped") {
		t.Fatalf("running manager: %v", err)
	}
	u.Set(unitstest.Dead("wazuh-manager.service"))
	out, err := run(t, d, e, "backup.manager_db", nil)
	if err != nil || !strings.Contains(out.Message, "2 files") {
		t.Fatalf("backup.manager_db: %q %v", out.Message, err)
	}
	copyDir := backupsOf(t, e).ManagerDB
	if fi, err := os.Lstat(filepath.Join(copyDir, "outside")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was followed or lost: %v %v", fi, err)
	}
	if out, err := run(t, d, e, "backup.manager_db", nil); err != nil || !strings.HasPrefix(out.Message, "SKIPPED: copy") {
		t.Fatalf("resumed: %q %v", out.Message, err)
	}
	// The new manager migrates its databases; the rollback puts them back.
	writeFile(t, filepath.Join(root, "var/ossec/queue/db/global.db"), "GLOBAL-v2-migrated", 0o640)
	writeFile(t, filepath.Join(root, "var/ossec/queue/db/002.db"), "NEW", 0o640)
	out, err = run(t, d, e, "restore.manager_db", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "var/ossec/queue/db/global.db")); got != "GLOBAL-v1" {
		t.Errorf("global.db restored as %q (%s)", got, out.Message)
	}
	if _, err := os.Stat(filepath.Join(root, "var/ossec/queue/db/002.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a database created after the copy survived the restore: %v", err)
	}

	// A manager without queue/db: skipped with a reason, and so is the restore.
	if err := os.RemoveAll(filepath.Join(root, "var/ossec/queue")); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(d, nil)
	if out, err := run(t, d, e2, "backup.manager_db", nil); err != nil || !strings.Contains(out.Message, "SKIPPED: no "+root+"/var/ossec/queue/db") {
		t.Fatalf("absent queue/db: %q %v", out.Message, err)
	}
	if out, err := run(t, d, e2, "restore.manager_db", nil); err != nil || !strings.Contains(out.Message, "SKIPPED") {
		t.Fatalf("restore without copy: %q %v", out.Message, err)
	}
}
