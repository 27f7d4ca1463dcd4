package steps_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

type tarEntry struct {
	name, body, link string
	typ              byte
}

func tarball(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Linkname: e.link}
		if e.typ == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// TestShipperModule: the wazuh profile replaces <home_dir>/module/wazuh
// with the target manager's module tarball when the module changes
// (4.14.1 → 4.14.2: 0.4 → 0.5), skips with the reason when it does not
// (4.9.0 → 4.10.0) or is unknown, and refuses a tarball with a link or an
// escaping name without touching the installed module.
func TestShipperModule(t *testing.T) {
	manifest := string(wazuhreal.Read(t, "wazuh-v4.9.0", "filebeat", "alerts-manifest.yml"))
	pipeline := string(wazuhreal.Read(t, "wazuh-v4.9.0", "filebeat", "alerts-pipeline.json"))
	good := tarball(t,
		tarEntry{name: "wazuh/", typ: tar.TypeDir},
		tarEntry{name: "wazuh/module.yml", body: "dashboards: []\n"},
		tarEntry{name: "wazuh/alerts/", typ: tar.TypeDir},
		tarEntry{name: "wazuh/alerts/manifest.yml", body: manifest},
		tarEntry{name: "wazuh/alerts/ingest/pipeline.json", body: pipeline},
		tarEntry{name: "README.md", body: "not installed"},
	)
	served := map[string][]byte{"/4.x/filebeat/wazuh-filebeat-0.5.tar.gz": good}
	var got []string
	hs := serveBodies(t, served, &got)
	root := t.TempDir()
	mod := filepath.Join(root, "usr/share/filebeat/module")
	writeFile(t, filepath.Join(mod, "wazuh/alerts/manifest.yml"), "old 0.4\n", 0o644)
	writeFile(t, filepath.Join(mod, "wazuh/alerts/stale.yml"), "from 0.4 only\n", 0o644)
	writeFile(t, filepath.Join(mod, "system/module.yml"), "another module\n", 0o644)
	cfg := testConfig(t, "profile: wazuh\nroot: "+root+"\nshipper:\n  module_source: "+hs.URL+"/4.x/filebeat/{module}.tar.gz\n")
	d := depsWith(cfg, nil)

	for _, tt := range []struct{ from, to, want string }{
		{"4.9.0-1", "4.10.0-1", "SKIPPED: the Filebeat module is wazuh-filebeat-0.4 for both manager 4.9.0 and 4.10.0: unchanged"},
		{"4.7.5-1", "4.9.0-1", "SKIPPED: no Filebeat module known for manager 4.7.5 or 4.9.0"},
	} {
		e := newEnv(d, map[string]any{rundata.KeyPreviousVersions: all(tt.from), rundata.KeyTargetVersions: all(tt.to)})
		out, err := run(t, d, e, "shipper.module", map[string]any{"version": "target"})
		if err != nil || !strings.HasPrefix(out.Message, tt.want) {
			t.Errorf("%s → %s: %q %v", tt.from, tt.to, out.Message, err)
		}
	}
	if len(got) != 0 {
		t.Fatalf("fetched %v for an unchanged module", got)
	}

	// Refused tarballs leave the installed module alone.
	for name, bad := range map[string][]byte{
		"symlink": tarball(t, tarEntry{name: "wazuh/alerts/manifest.yml", typ: tar.TypeSymlink, link: "/etc/shadow"}),
		"escape":  tarball(t, tarEntry{name: "wazuh/../../../../etc/cron.d/x", body: "* * * * * root sh\n"}),
		"empty":   tarball(t, tarEntry{name: "other/module.yml", body: "x"}),
		"notgz":   []byte("<html>404</html>"),
	} {
		served["/4.x/filebeat/wazuh-filebeat-0.5.tar.gz"] = bad
		e := newEnv(d, map[string]any{rundata.KeyPreviousVersions: all("4.14.1-1"), rundata.KeyTargetVersions: all("4.14.2-1")})
		if _, err := run(t, d, e, "shipper.module", map[string]any{"version": "target"}); err == nil {
			t.Errorf("%s tarball accepted", name)
		}
		if readFile(t, filepath.Join(mod, "wazuh/alerts/manifest.yml")) != "old 0.4\n" {
			t.Fatalf("%s tarball changed the installed module", name)
		}
	}

	served["/4.x/filebeat/wazuh-filebeat-0.5.tar.gz"] = good
	e := newEnv(d, map[string]any{rundata.KeyPreviousVersions: all("4.14.1-1"), rundata.KeyTargetVersions: all("4.14.2-1")})
	out, err := run(t, d, e, "shipper.module", map[string]any{"version": "target"})
	if err != nil || !strings.Contains(out.Message, "wazuh-filebeat-0.5 installed") || !strings.Contains(out.Message, "(3 files)") {
		t.Fatalf("install: %q %v", out.Message, err)
	}
	if readFile(t, filepath.Join(mod, "wazuh/alerts/manifest.yml")) != manifest || readFile(t, filepath.Join(mod, "wazuh/alerts/ingest/pipeline.json")) != pipeline {
		t.Error("the module's files are not the tarball's")
	}
	if _, err := os.Stat(filepath.Join(mod, "wazuh/alerts/stale.yml")); !os.IsNotExist(err) {
		t.Error("a file of the old module survived the swap")
	}
	if readFile(t, filepath.Join(mod, "system/module.yml")) != "another module\n" {
		t.Error("another module was touched")
	}
	if _, err := os.Stat(filepath.Join(mod, "README.md")); !os.IsNotExist(err) {
		t.Error("a file outside the module directory was installed")
	}
	entries, _ := os.ReadDir(mod)
	for _, en := range entries {
		if strings.Contains(en.Name(), "siemctl") {
			t.Errorf("leftover %s", en.Name())
		}
	}

	// The siem profile has no module source: skipped with the reason.
	sd := depsWith(testConfig(t, ""), nil)
	se := newEnv(sd, map[string]any{rundata.KeyPreviousVersions: all("4.14.1-1"), rundata.KeyTargetVersions: all("4.14.2-1")})
	if out, err := run(t, sd, se, "shipper.module", map[string]any{"version": "target"}); err != nil || !strings.Contains(out.Message, "shipper.module_source is not set") {
		t.Errorf("siem: %q %v", out.Message, err)
	}
}
