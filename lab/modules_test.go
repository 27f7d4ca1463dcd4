package lab

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/testenv"
)

func writeTestFile(t *testing.T, p string, data []byte) {
	t.Helper()
	testenv.WriteFile(t, p, data, 0o644)
}

// writeJar writes a jar holding the given entries.
func writeJar(t *testing.T, p string, entries ...string) {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		f, err := w.Create(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, p, buf.Bytes())
}

var testModule = Module{Name: "ingest-common", GroupID: "org.opensearch.plugin", ArtifactID: "ingest-common",
	Description: "ingest processors", Classname: "org.opensearch.ingest.common.IngestCommonPlugin"}

// completeHome writes a home of osv that homeReady accepts for mods.
func completeHome(t *testing.T, home, osv string, mods []Module) {
	t.Helper()
	for _, m := range mods {
		d := filepath.Join(home, "modules", m.Name)
		writeTestFile(t, filepath.Join(d, "plugin-descriptor.properties"), descriptorFor(m, osv, "11"))
		writeJar(t, filepath.Join(d, m.ArtifactID+"-"+osv+".jar"), strings.ReplaceAll(m.Classname, ".", "/")+".class")
	}
	writeTestFile(t, filepath.Join(home, readyMarker), markerFor(osv, mods))
}

func TestHomeReady(t *testing.T) {
	mods := []Module{testModule, Modules[1]}
	tests := []struct {
		name   string
		mangle func(t *testing.T, home string)
		want   bool
		reason string
	}{
		{"complete", func(*testing.T, string) {}, true, ""},
		{"no marker", func(t *testing.T, h string) { os.Remove(filepath.Join(h, readyMarker)) }, false, "no ready marker"},
		{"marker of the old code", func(t *testing.T, h string) {
			writeTestFile(t, filepath.Join(h, readyMarker), []byte("2.11.1\n"))
		}, false, "marker differs"},
		{"marker of another layout", func(t *testing.T, h string) {
			m := strings.Replace(string(markerFor("2.11.1", mods)), "layout=2", "layout=1", 1)
			writeTestFile(t, filepath.Join(h, readyMarker), []byte(m))
		}, false, "marker differs"},
		{"marker of fewer modules", func(t *testing.T, h string) {
			writeTestFile(t, filepath.Join(h, readyMarker), markerFor("2.11.1", mods[:1]))
		}, false, "marker differs"},
		{"marker of another version", func(t *testing.T, h string) {
			writeTestFile(t, filepath.Join(h, readyMarker), markerFor("2.19.3", mods))
		}, false, "marker differs"},
		{"module descriptor missing", func(t *testing.T, h string) {
			os.Remove(filepath.Join(h, "modules/lang-mustache/plugin-descriptor.properties"))
		}, false, "lang-mustache has no descriptor"},
		{"plugin jar missing", func(t *testing.T, h string) {
			os.Remove(filepath.Join(h, "modules/ingest-common/ingest-common-2.11.1.jar"))
		}, false, "ingest-common has no plugin jar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			completeHome(t, home, "2.11.1", mods)
			tt.mangle(t, home)
			got, why := homeReady(home, "2.11.1", mods)
			if got != tt.want || !strings.Contains(why, tt.reason) {
				t.Errorf("homeReady = %v %q, want %v %q", got, why, tt.want, tt.reason)
			}
		})
	}
}

func TestMarkerListsModules(t *testing.T) {
	m := string(markerFor("2.19.3", Modules))
	for _, want := range []string{"layout=2\n", "opensearch=2.19.3\n", "modules=ingest-common,lang-mustache\n", "plugins=opensearch-security\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("marker %q lacks %q", m, want)
		}
	}
}

func TestDescriptorFor(t *testing.T) {
	// The keys of the distribution's own transport-netty4 descriptor (2.11.1 and 2.19.3).
	distKeys := []string{"classname", "custom.foldername", "description", "extended.plugins", "has.native.controller",
		"java.version", "name", "opensearch.version", "version"}
	tests := []struct {
		mod  Module
		osv  string
		java string
	}{
		{Modules[0], "2.11.1", "11"},
		{Modules[1], "2.19.3", "17"},
	}
	for _, tt := range tests {
		t.Run(tt.mod.Name+"-"+tt.osv, func(t *testing.T) {
			p := readProperties(descriptorFor(tt.mod, tt.osv, tt.java))
			var keys []string
			for k := range p {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if strings.Join(keys, " ") != strings.Join(distKeys, " ") {
				t.Errorf("keys %v, want %v", keys, distKeys)
			}
			want := map[string]string{"name": tt.mod.Name, "classname": tt.mod.Classname, "version": tt.osv,
				"opensearch.version": tt.osv, "java.version": tt.java, "description": tt.mod.Description,
				"extended.plugins": "", "has.native.controller": "false"}
			for k, v := range want {
				if p[k] != v {
					t.Errorf("%s = %q, want %q", k, p[k], v)
				}
			}
		})
	}
}

func TestDistJavaVersion(t *testing.T) {
	tests := []struct {
		name, descriptor, want string
	}{
		{"from transport-netty4", "# c\nname=transport-netty4\njava.version=17\n", "17"},
		{"key missing", "name=transport-netty4\n", "11"},
		{"no descriptor", "", "11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if tt.descriptor != "" {
				writeTestFile(t, filepath.Join(home, "modules/transport-netty4/plugin-descriptor.properties"), []byte(tt.descriptor))
			}
			if got := distJavaVersion(home); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestJarHasClass(t *testing.T) {
	dir := t.TempDir()
	jar := filepath.Join(dir, "a.jar")
	writeJar(t, jar, "META-INF/MANIFEST.MF", "org/opensearch/ingest/common/IngestCommonPlugin.class")
	tests := []struct {
		jar, class string
		ok         bool
	}{
		{jar, "org.opensearch.ingest.common.IngestCommonPlugin", true},
		{jar, "org.opensearch.script.mustache.MustachePlugin", false},
		{filepath.Join(dir, "missing.jar"), "x.Y", false},
	}
	for _, tt := range tests {
		if err := jarHasClass(tt.jar, tt.class); (err == nil) != tt.ok {
			t.Errorf("jarHasClass(%s, %s) = %v, want ok=%v", filepath.Base(tt.jar), tt.class, err, tt.ok)
		}
	}
}

func TestReplaceDir(t *testing.T) {
	tests := []struct {
		name     string
		existing bool
	}{{"new", false}, {"exchange", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
			writeTestFile(t, filepath.Join(src, "new"), []byte("new"))
			if tt.existing {
				writeTestFile(t, filepath.Join(dst, "old"), []byte("old"))
			}
			if err := replaceDir(src, dst); err != nil {
				t.Fatal(err)
			}
			if data, err := os.ReadFile(filepath.Join(dst, "new")); err != nil || string(data) != "new" {
				t.Errorf("dst/new = %q %v", data, err)
			}
			if _, err := os.Stat(filepath.Join(dst, "old")); err == nil {
				t.Error("old tree content left in dst")
			}
			if _, err := os.Stat(src); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("src left: %v", err)
			}
		})
	}
}

func TestLinkTreeRebuildsStaleFarm(t *testing.T) {
	base := t.TempDir()
	src, dst := filepath.Join(base, "home"), filepath.Join(base, "farm")
	writeTestFile(t, filepath.Join(src, readyMarker), markerFor("2.11.1", Modules))
	writeTestFile(t, filepath.Join(src, "modules/ingest-common/x.jar"), []byte("jar"))

	// A farm made from a home of the old code: no ingest-common, old marker.
	writeTestFile(t, filepath.Join(dst, readyMarker), []byte("2.11.1\n"))
	writeTestFile(t, filepath.Join(dst, "stale"), []byte("stale"))
	if err := LinkTree(src, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "modules/ingest-common/x.jar")); err != nil {
		t.Errorf("stale farm not rebuilt: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "stale")); err == nil {
		t.Error("stale farm content left")
	}
	if _, err := os.Stat(dst + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary farm left: %v", err)
	}
	// A current farm is kept as it is.
	writeTestFile(t, filepath.Join(dst, "sentinel"), []byte("x"))
	if err := LinkTree(src, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "sentinel")); err != nil {
		t.Errorf("current farm rebuilt: %v", err)
	}
	// An unprepared source is refused.
	if err := LinkTree(filepath.Join(base, "nothing"), filepath.Join(base, "farm2")); err == nil {
		t.Error("LinkTree of an unprepared home succeeded")
	}
}

// fakeMaven puts a mvn on PATH that copies the jars of repo into -DoutputDirectory and logs its
// arguments; with failOffline it fails when run with -o (an empty local repository).
func fakeMaven(t *testing.T, repo string, failOffline bool) (logFile string) {
	t.Helper()
	bin := t.TempDir()
	logFile = filepath.Join(bin, "mvn.log")
	fail := ""
	if failOffline {
		fail = `[ "$1" = "-o" ] && { echo "offline: artifact not in local repository" >&2; exit 1; }`
	}
	script := `#!/bin/sh
echo "$@" >> "` + logFile + `"
` + fail + `
for a in "$@"; do case "$a" in -DoutputDirectory=*) out=${a#-DoutputDirectory=} ;; esac; done
mkdir -p "$out" && cp "` + repo + `"/*.jar "$out"/
`
	writeTestFile(t, filepath.Join(bin, "mvn"), []byte(script))
	if err := os.Chmod(filepath.Join(bin, "mvn"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return logFile
}

func TestAssembleModule(t *testing.T) {
	classEntry := "org/opensearch/ingest/common/IngestCommonPlugin.class"
	tests := []struct {
		name        string
		inRepo      bool // the artifact is in the cache's Maven repository already
		failOffline bool
		mainEntry   string
		policy      string
		wantErr     string
		wantCalls   []string // "offline" or "online", in order
	}{
		{"warm cache: offline only", true, false, classEntry, "", "", []string{"offline"}},
		{"cold cache: straight online", false, true, classEntry, "", "", []string{"online"}},
		{"dependency missing: online after offline fails", true, true, classEntry, "", "", []string{"offline", "online"}},
		{"with policy", true, false, classEntry, "grant {};\n", "", []string{"offline"}},
		{"wrong artifact", true, false, "org/other/Plugin.class", "", "has no class", []string{"offline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := t.TempDir()
			writeJar(t, filepath.Join(repo, "ingest-common-2.11.1.jar"), tt.mainEntry)
			writeJar(t, filepath.Join(repo, "opensearch-grok-2.11.1.jar"), "g.class")
			writeJar(t, filepath.Join(repo, "log4j-api-2.20.0.jar"), "l.class") // already in lib/
			logFile := fakeMaven(t, repo, tt.failOffline)

			home := t.TempDir()
			writeTestFile(t, filepath.Join(home, "lib/log4j-api-2.20.0.jar"), []byte("lib"))
			writeTestFile(t, filepath.Join(home, "modules/transport-netty4/plugin-descriptor.properties"), []byte("java.version=11\n"))
			m := testModule
			m.Policy = tt.policy
			c := &Cache{Dir: t.TempDir()}
			if tt.inRepo {
				writeTestFile(t, c.artifactInRepo(m, "2.11.1"), []byte("jar"))
			}
			n, err := c.assembleModule(context.Background(), home, "2.11.1", t.TempDir(), m)
			calls, _ := os.ReadFile(logFile)
			var modes []string
			for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
				if strings.HasPrefix(line, "-o ") {
					modes = append(modes, "offline")
				} else {
					modes = append(modes, "online")
				}
			}
			if strings.Join(modes, ",") != strings.Join(tt.wantCalls, ",") {
				t.Errorf("mvn runs %v, want %v:\n%s", modes, tt.wantCalls, calls)
			}
			if !strings.Contains(string(calls), "-Dmaven.repo.local="+filepath.Join(c.Dir, "m2")) {
				t.Errorf("mvn not pointed at the cache's repository: %s", calls)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(home, "modules/ingest-common")
			if n != 2 {
				t.Errorf("%d jars, want 2", n)
			}
			if _, err := os.Stat(filepath.Join(dir, "log4j-api-2.20.0.jar")); err == nil {
				t.Error("jar already in lib/ kept in the module (jar hell)")
			}
			d, err := os.ReadFile(filepath.Join(dir, "plugin-descriptor.properties"))
			if err != nil || readProperties(d)["classname"] != m.Classname || readProperties(d)["java.version"] != "11" {
				t.Errorf("descriptor %q %v", d, err)
			}
			pol, err := os.ReadFile(filepath.Join(dir, "plugin-security.policy"))
			if tt.policy == "" && err == nil {
				t.Error("policy written for a module without one")
			}
			if tt.policy != "" && string(pol) != tt.policy {
				t.Errorf("policy = %q %v", pol, err)
			}
			if ok, why := homeReady(home, "2.11.1", []Module{m}); ok || !strings.Contains(why, "marker") {
				t.Errorf("home without marker ready = %v %q", ok, why)
			}
			// The module exists now: assembling it again is refused rather than mixed.
			if _, err := c.assembleModule(context.Background(), home, "2.11.1", t.TempDir(), m); err == nil {
				t.Error("second assembly into an existing module succeeded")
			}
		})
	}
}
