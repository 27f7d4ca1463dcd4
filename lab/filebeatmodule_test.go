package lab

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/siemctl/siemctl/internal/shipper"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

type tarred struct {
	hdr  tar.Header
	body []byte
}

func untar(t *testing.T, tgz []byte) []tarred {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatalf("not a gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	var out []tarred
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarred{hdr: *h, body: b})
	}
}

// manifestOf is what a fileset's manifest.yml declares.
type manifestOf struct {
	Var []struct {
		Name    string `yaml:"name"`
		Default any    `yaml:"default"`
	} `yaml:"var"`
	Input          string `yaml:"input"`
	IngestPipeline string `yaml:"ingest_pipeline"`
}

// The lab's module tarball has the real one's layout: one directory wazuh/ (each directory before
// what it holds), root:root, directories 0755 and files 0644, only regular files and directories
// (what siemctl's shipper/module step accepts), the files the shipper package installs, the same
// bytes each time. Its alerts fileset declares what Wazuh's real one (wazuh-v4.9.0's
// alerts/manifest.yml) declares: the same variables with the same defaults, and the input and
// ingest pipeline at the real relative paths, which the tarball holds.
func TestModuleTarball(t *testing.T) {
	tgz, err := ModuleTarball(WazuhShipper)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ModuleTarball(WazuhShipper)
	if !bytes.Equal(tgz, again) {
		t.Error("two tarballs of the same module differ")
	}
	entries := untar(t, tgz)
	files := map[string][]byte{}
	seen := map[string]bool{}
	for _, e := range entries {
		h := e.hdr
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Gname != "root" {
			t.Errorf("%s: owner %d:%d %s:%s, want root:root", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		clean := strings.TrimSuffix(h.Name, "/")
		if clean != "wazuh" && !strings.HasPrefix(clean, "wazuh/") {
			t.Errorf("entry %q outside wazuh/", h.Name)
		}
		if parent := path.Dir(clean); parent != "." && !seen[parent] {
			t.Errorf("%s comes before its directory %s", h.Name, parent)
		}
		seen[clean] = true
		switch h.Typeflag {
		case tar.TypeDir:
			if h.Mode != 0o755 || !strings.HasSuffix(h.Name, "/") {
				t.Errorf("directory %s mode %o", h.Name, h.Mode)
			}
		case tar.TypeReg:
			if h.Mode != 0o644 {
				t.Errorf("file %s mode %o", h.Name, h.Mode)
			}
			files[h.Name] = e.body
		default:
			t.Errorf("%s: type %q, only files and directories", h.Name, h.Typeflag)
		}
	}
	// The same files as the shipper package's module directory.
	pkg, err := ShipperPackage(ShipperSpec{Layout: WazuhShipper, Version: "4.14.4", Root: "/r", Filebeat: "/proc/self/exe",
		IndexerPort: 9200, Template: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	installed := map[string][]byte{}
	for _, f := range pkg.Files {
		if rel, ok := strings.CutPrefix(f.Path, "usr/share/filebeat/module/"); ok {
			installed[rel] = f.Data
		}
	}
	if len(installed) != 6 || len(files) != len(installed) {
		t.Fatalf("tarball files %v, package module files %d", slices.Sorted(maps.Keys(files)), len(installed))
	}
	for rel, data := range installed {
		if !bytes.Equal(files[rel], data) {
			t.Errorf("%s differs from the package's", rel)
		}
	}

	var real, lab manifestOf
	if err := yaml.Unmarshal(wazuhreal.Read(t, "wazuh-v4.9.0", "filebeat", "alerts-manifest.yml"), &real); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(files["wazuh/alerts/manifest.yml"], &lab); err != nil {
		t.Fatal(err)
	}
	if real.Input == "" || real.IngestPipeline == "" || len(real.Var) == 0 {
		t.Fatalf("real manifest not understood: %+v", real)
	}
	if lab.Input != real.Input || lab.IngestPipeline != real.IngestPipeline {
		t.Errorf("lab input %q pipeline %q, real %q %q", lab.Input, lab.IngestPipeline, real.Input, real.IngestPipeline)
	}
	for _, rel := range []string{real.Input, real.IngestPipeline} {
		if _, ok := files["wazuh/alerts/"+rel]; !ok {
			t.Errorf("the tarball lacks wazuh/alerts/%s, which the real manifest names", rel)
		}
	}
	if !equalYAML(t, lab.Var, real.Var) {
		t.Errorf("lab variables %+v, real %+v", lab.Var, real.Var)
	}
}

// The wazuh lab writes the tarball siemctl picks for every release of its set where its config's
// shipper.module_source points; the siem lab (whose siemctl profile manages no module) neither
// writes one nor sets the key.
func TestModuleTarballsServed(t *testing.T) {
	for _, profile := range []string{"wazuh", "siem"} {
		t.Run(profile, func(t *testing.T) {
			dir := t.TempDir()
			p := Profiles[profile]
			l := &Lab{core: core{st: &State{ID: "abc", Dir: dir, Root: filepath.Join(dir, "root"), Ports: p.Ports(100), PortOffset: 100,
				Profile: profile, Version: "4.12.0"}, prof: p}}
			if err := l.writeModuleTarballs(); err != nil {
				t.Fatal(err)
			}
			cfg, err := writtenConfig(t, l)
			if err != nil {
				t.Fatal(err)
			}
			src := cfg.Shipper.ModuleSource
			if profile == "siem" {
				if _, err := os.Stat(filepath.Join(dir, moduleTarballDir)); src != "" || !os.IsNotExist(err) {
					t.Errorf("siem: module_source %q, tarballs %v", src, err)
				}
				return
			}
			if src != filepath.Join(dir, "filebeat-modules", "{module}.tar.gz") {
				t.Fatalf("module_source %q", src)
			}
			want, _ := ModuleTarball(WazuhShipper)
			names := map[string]bool{}
			for _, v := range SetOf("4.12.0") {
				m, ok := shipper.ModuleFor(v)
				if !ok {
					t.Fatalf("siemctl knows no module for %s", v)
				}
				names[m.Tarball] = true
				got, err := os.ReadFile(strings.ReplaceAll(src, "{module}", m.Tarball))
				if err != nil || !bytes.Equal(got, want) || m.Dir != WazuhShipper.Module {
					t.Errorf("%s: module %s (dir %s): %v", v, m.Tarball, m.Dir, err)
				}
			}
			if len(names) != 2 {
				t.Errorf("modules of the wazuh set %v, want 0.4 and 0.5 (4.12.0 → 4.14.4 changes it)", names)
			}
		})
	}
}

func equalYAML(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
