package lab

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeJDK makes a Java home at dir: bin/java (executable unless noExec) and a release file with
// JAVA_VERSION=version (no release file when version is "").
func fakeJDK(t *testing.T, dir, version string, noExec bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	mode := os.FileMode(0o755)
	if noExec {
		mode = 0o644
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "java"), []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	if version != "" {
		rel := "IMPLEMENTOR=\"Debian\"\nJAVA_RUNTIME_VERSION=\"x\"\nJAVA_VERSION=\"" + version + "\"\nOS_ARCH=\"whatever\"\n"
		if err := os.WriteFile(filepath.Join(dir, "release"), []byte(rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindJavaHome(t *testing.T) {
	type jdk struct {
		name, version string
		noExec        bool
		link          string // a symlink to this name instead of a home
	}
	tests := []struct {
		name     string
		jdks     []jdk
		javaHome string // relative to the jvm dir's parent; "" unset
		want     string // name under the jvm dir, or "JAVA_HOME"
		wantErr  string
	}{
		{name: "arm64 only", jdks: []jdk{{name: "java-17-openjdk-arm64", version: "17.0.15"}}, want: "java-17-openjdk-arm64"},
		{name: "amd64 only", jdks: []jdk{{name: "java-17-openjdk-amd64", version: "17.0.15"}}, want: "java-17-openjdk-amd64"},
		{name: "ppc64el among other majors", jdks: []jdk{
			{name: "java-11-openjdk-ppc64el", version: "11.0.25"},
			{name: "java-21-openjdk-ppc64el", version: "21.0.5"},
			{name: "java-17-openjdk-ppc64el", version: "17.0.13"},
		}, want: "java-17-openjdk-ppc64el"},
		{name: "directory name lies, release file decides", jdks: []jdk{
			{name: "java-17-openjdk-amd64", version: "21.0.1"},
			{name: "temurin-jdk", version: "17.0.9"},
		}, want: "temurin-jdk"},
		{name: "symlinked alias resolved to the real home", jdks: []jdk{
			{name: "java-17-openjdk-s390x", version: "17.0.2"},
			{name: "java-1.17.0-openjdk-s390x", link: "java-17-openjdk-s390x"},
		}, want: "java-17-openjdk-s390x"},
		{name: "JAVA_HOME wins when it is 17", jdks: []jdk{{name: "java-17-openjdk-amd64", version: "17.0.15"}},
			javaHome: "opt/jdk17", want: "JAVA_HOME"},
		{name: "JAVA_HOME of another major falls back", jdks: []jdk{{name: "java-17-openjdk-riscv64", version: "17.0.15"}},
			javaHome: "opt/jdk21", want: "java-17-openjdk-riscv64"},
		{name: "no release file or no executable is not a home", jdks: []jdk{
			{name: "a-17", version: ""},
			{name: "b-17", version: "17.0.1", noExec: true},
			{name: "openjdk-17"}, // a src.zip-only directory
		}, wantErr: "no Java home"},
		{name: "only other majors", jdks: []jdk{{name: "temurin-25-jdk-amd64", version: "25"}, {name: "java-8", version: "1.8.0_392"}},
			wantErr: "java-8 is Java 8, temurin-25-jdk-amd64 is Java 25"},
		{name: "nothing installed", wantErr: "apt-get install openjdk-17-jre-headless"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			jvm := filepath.Join(base, "jvm")
			if len(tt.jdks) > 0 {
				if err := os.MkdirAll(jvm, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			fakeJDK(t, filepath.Join(base, "opt/jdk17"), "17.0.8", false)
			fakeJDK(t, filepath.Join(base, "opt/jdk21"), "21.0.8", false)
			for _, j := range tt.jdks {
				switch {
				case j.link != "":
					if err := os.Symlink(j.link, filepath.Join(jvm, j.name)); err != nil {
						t.Fatal(err)
					}
				case j.version == "" && !strings.HasSuffix(j.name, "-17"):
					if err := os.MkdirAll(filepath.Join(jvm, j.name), 0o755); err != nil {
						t.Fatal(err)
					}
				default:
					fakeJDK(t, filepath.Join(jvm, j.name), j.version, j.noExec)
				}
			}
			javaHome := ""
			if tt.javaHome != "" {
				javaHome = filepath.Join(base, tt.javaHome)
			}
			got, err := FindJavaHome(javaHome, jvm)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrNoJava) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FindJavaHome = %q, %v; want ErrNoJava containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(jvm, tt.want)
			if tt.want == "JAVA_HOME" {
				want = javaHome
			}
			if w, err := filepath.EvalSymlinks(want); err == nil {
				want = w
			}
			if got != want {
				t.Fatalf("FindJavaHome = %q, want %q", got, want)
			}
		})
	}
}

func TestFindJavaHomeNamesRejectedJavaHome(t *testing.T) {
	base := t.TempDir()
	fakeJDK(t, filepath.Join(base, "jdk11"), "11.0.2", false)
	_, err := FindJavaHome(filepath.Join(base, "jdk11"), filepath.Join(base, "missing"))
	if err == nil || !strings.Contains(err.Error(), "jdk11 is Java 11") || !strings.Contains(err.Error(), "set JAVA_HOME") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseJavaMajor(t *testing.T) {
	for in, want := range map[string]int{"17.0.15": 17, "17": 17, "21-ea": 21, "1.8.0_392": 8, "11.0.2+9": 11} {
		if got, err := parseJavaMajor(in); err != nil || got != want {
			t.Errorf("parseJavaMajor(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "0.1"} {
		if _, err := parseJavaMajor(in); err == nil {
			t.Errorf("parseJavaMajor(%q): no error", in)
		}
	}
}

func TestIndexerUnitUsesFoundJavaHome(t *testing.T) {
	unit := indexerUnitFile(IndexerSpec{Version: "4.9.0", Root: "/r", JavaHome: "/usr/lib/jvm/java-17-openjdk-arm64"})
	if !strings.Contains(unit, "Environment=OPENSEARCH_JAVA_HOME=/usr/lib/jvm/java-17-openjdk-arm64\n") {
		t.Fatalf("unit does not use the found Java home:\n%s", unit)
	}
	if s := securityInitScript(Profiles["wazuh"], "/r", "/opt/jdk"); !strings.Contains(s, "${OPENSEARCH_JAVA_HOME:-/opt/jdk}") {
		t.Fatalf("security init script does not use the found Java home")
	}
	if _, err := IndexerPackage(IndexerSpec{Version: "4.9.0", Root: "/r", Dist: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "Java home") {
		t.Fatalf("IndexerPackage without a Java home: %v", err)
	}
}

func TestDebArch(t *testing.T) {
	for in, want := range map[string]string{"amd64": "amd64", "arm64": "arm64", "arm": "armhf", "386": "i386", "ppc64le": "ppc64el", "s390x": "s390x", "riscv64": "riscv64"} {
		if got := DebArch(in); got != want {
			t.Errorf("DebArch(%q) = %q, want %q", in, got, want)
		}
	}
}
