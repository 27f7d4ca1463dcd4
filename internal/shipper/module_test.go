package shipper

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleFor(t *testing.T) {
	for v, want := range map[string]string{"4.8.0": "wazuh-filebeat-0.4", "4.9.0": "wazuh-filebeat-0.4", "4.14.1": "wazuh-filebeat-0.4", "4.14.2": "wazuh-filebeat-0.5", "4.14.7": "wazuh-filebeat-0.5", "4.7.5": "", "not-a-version": ""} {
		m, ok := ModuleFor(v)
		if got := m.Tarball; (want == "") == ok || got != want {
			t.Errorf("%s: %q %v, want %q", v, got, ok, want)
		}
	}
}

type tarEntry struct {
	name, body, link string
	typ              byte
}

func moduleTarball(t *testing.T, entries ...tarEntry) []byte {
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
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestInstallModule: the module directory is swapped whole (a file only the
// old module had is gone, other modules and top-level files untouched), and
// a tarball with a link, an escaping name, nothing under the module or no
// gzip at all is refused before anything changes.
func TestInstallModule(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(rel string) string {
		b, _ := os.ReadFile(filepath.Join(dir, rel))
		return string(b)
	}
	write("wazuh/alerts/manifest.yml", "old 0.4\n")
	write("wazuh/alerts/stale.yml", "from 0.4 only\n")
	write("system/module.yml", "another module\n")

	for name, bad := range map[string][]byte{
		"symlink":  moduleTarball(t, tarEntry{name: "wazuh/alerts/manifest.yml", typ: tar.TypeSymlink, link: "/etc/shadow"}),
		"escape":   moduleTarball(t, tarEntry{name: "wazuh/../../../../etc/cron.d/x", body: "* * * * * root sh\n"}),
		"absolute": moduleTarball(t, tarEntry{name: "/wazuh/module.yml", body: "x"}),
		"empty":    moduleTarball(t, tarEntry{name: "other/module.yml", body: "x"}),
		"notgz":    []byte("<html>404</html>"),
	} {
		if _, err := InstallModule(context.Background(), bad, dir, "wazuh"); err == nil {
			t.Errorf("%s tarball accepted", name)
		}
		if read("wazuh/alerts/manifest.yml") != "old 0.4\n" {
			t.Fatalf("%s tarball changed the installed module", name)
		}
	}

	good := moduleTarball(t,
		tarEntry{name: "wazuh/", typ: tar.TypeDir},
		tarEntry{name: "wazuh/module.yml", body: "dashboards: []\n"},
		tarEntry{name: "wazuh/alerts/manifest.yml", body: "new 0.5\n"},
		tarEntry{name: "README.md", body: "not installed"},
	)
	n, err := InstallModule(context.Background(), good, dir, "wazuh")
	if err != nil || n != 2 {
		t.Fatalf("install: %d files, %v", n, err)
	}
	if read("wazuh/alerts/manifest.yml") != "new 0.5\n" || read("wazuh/module.yml") != "dashboards: []\n" {
		t.Error("the module's files are not the tarball's")
	}
	if _, err := os.Stat(filepath.Join(dir, "wazuh/alerts/stale.yml")); !os.IsNotExist(err) {
		t.Error("a file of the old module survived the swap")
	}
	if read("system/module.yml") != "another module\n" {
		t.Error("another module was touched")
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); !os.IsNotExist(err) {
		t.Error("a file outside the module directory was installed")
	}
	entries, _ := os.ReadDir(dir)
	for _, en := range entries {
		if strings.Contains(en.Name(), "siemctl") {
			t.Errorf("leftover %s", en.Name())
		}
	}
}
