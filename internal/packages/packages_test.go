package packages

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/process"
)

type call struct {
	env  []string
	argv []string
}

type result struct {
	stdout, stderr string
	code           int
	err            error
}

// fakeRunner records calls and answers from a queue (the last answer repeats).
type fakeRunner struct {
	calls   []call
	answers []result
}

func (f *fakeRunner) Run(_ context.Context, env []string, name string, args ...string) ([]byte, []byte, int, error) {
	f.calls = append(f.calls, call{env: env, argv: append([]string{name}, args...)})
	r := result{}
	if len(f.answers) > 0 {
		r = f.answers[0]
		if len(f.answers) > 1 {
			f.answers = f.answers[1:]
		}
	}
	return []byte(r.stdout), []byte(r.stderr), r.code, r.err
}

func newApt(t *testing.T, fr *fakeRunner, env ...string) *Manager {
	t.Helper()
	m, err := New(KindApt, fr, Options{Env: env, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewAuto(t *testing.T) {
	tests := []struct {
		name    string
		have    []string
		kind    string
		want    string
		wantErr bool
	}{
		{"debian", []string{"dpkg-query", "rpm"}, "auto", KindApt, false},
		{"rhel", []string{"rpm"}, "", KindYum, false},
		{"nothing", nil, "auto", "", true},
		{"explicit yum", []string{"dpkg-query"}, "yum", KindYum, false},
		{"bad kind", nil, "zypper", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			look := func(p string) (string, error) {
				for _, h := range tt.have {
					if h == p {
						return "/usr/bin/" + p, nil
					}
				}
				return "", exec.ErrNotFound
			}
			m, err := New(tt.kind, &fakeRunner{}, Options{LookPath: look})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && m.Kind() != tt.want {
				t.Fatalf("kind = %s", m.Kind())
			}
		})
	}
}

func TestInstalledApt(t *testing.T) {
	fr := &fakeRunner{answers: []result{{
		stdout: "siem-demo\tinstall ok installed\t4.10.0-1\nold\tdeinstall ok config-files\t1.0\n",
		stderr: "dpkg-query: no packages found matching nope\n", code: 1,
	}}}
	m := newApt(t, fr, "APT_CONFIG=/lab/apt-lab.conf", "DPKG_ROOT=/lab/root")
	got, err := m.Installed(context.Background(), "siem-demo", "old", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"siem-demo": "4.10.0-1", "old": "", "nope": ""}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Installed = %v", got)
	}
	c := fr.calls[0]
	wantArgv := []string{"dpkg-query", "--admindir=/lab/root/var/lib/dpkg", "-W", "-f=${Package}\t${Status}\t${Version}\n", "siem-demo", "old", "nope"}
	if !reflect.DeepEqual(c.argv, wantArgv) {
		t.Fatalf("argv = %q", c.argv)
	}
	if !reflect.DeepEqual(c.env, []string{"APT_CONFIG=/lab/apt-lab.conf", "DPKG_ROOT=/lab/root"}) {
		t.Fatalf("env = %q", c.env)
	}

	// A real failure is not hidden behind "no packages found".
	fr2 := &fakeRunner{answers: []result{{stderr: "dpkg-query: error: cannot access archive: No such file\n", code: 2}}}
	if _, err := newApt(t, fr2).Installed(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "cannot access archive") {
		t.Fatalf("err = %v", err)
	}
	// Could not run at all.
	fr3 := &fakeRunner{answers: []result{{err: exec.ErrNotFound, code: -1}}}
	if _, err := newApt(t, fr3).Installed(context.Background(), "x"); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestInstalledYum(t *testing.T) {
	fr := &fakeRunner{answers: []result{{stdout: "filebeat\t7.10.2-1\npackage nope is not installed\n", code: 1}}}
	m, err := New(KindYum, fr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Installed(context.Background(), "filebeat", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"filebeat": "7.10.2-1", "nope": ""}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Installed = %v", got)
	}
	if fr.calls[0].argv[0] != "rpm" || fr.calls[0].argv[1] != "-q" {
		t.Fatalf("argv %q", fr.calls[0].argv)
	}
}

func TestInstallCommands(t *testing.T) {
	apt := newApt(t, &fakeRunner{})
	pkgs := map[string]string{"siem-manager": "4.10.0-1", "siem-indexer": "4.10.0-1"}
	tests := []struct {
		name string
		opts InstallOptions
		want string
	}{
		{"plain", InstallOptions{}, "DEBIAN_FRONTEND=noninteractive apt-get install -y -q siem-indexer=4.10.0-1 siem-manager=4.10.0-1"},
		{"downgrade keep config", InstallOptions{AllowDowngrades: true, KeepConfig: true},
			"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold siem-indexer=4.10.0-1 siem-manager=4.10.0-1"},
		{"held", InstallOptions{AllowHeld: true}, "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-change-held-packages siem-indexer=4.10.0-1 siem-manager=4.10.0-1"},
	}
	for _, tt := range tests {
		cmds := apt.InstallCommands(pkgs, tt.opts, nil)
		if len(cmds) != 1 || cmds[0].String() != tt.want {
			t.Errorf("%s: %v", tt.name, cmds)
		}
	}

	yum, _ := New(KindYum, &fakeRunner{})
	cmds := yum.InstallCommands(map[string]string{"a": "4.9.0-1", "b": "4.10.0-1"}, InstallOptions{AllowDowngrades: true},
		map[string]string{"a": "4.10.0-1", "b": "4.9.0-1"})
	var got []string
	for _, c := range cmds {
		got = append(got, c.String())
	}
	if want := []string{"yum install -y b-4.10.0-1", "yum downgrade -y a-4.9.0-1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("yum commands = %q", got)
	}
}

func TestInstallErrors(t *testing.T) {
	tests := []struct {
		name   string
		stderr string
		want   error
	}{
		{"downgrade", "E: Packages were downgraded and -y was used without --allow-downgrades.\n", ErrDowngradeNotAllowed},
		{"held", "E: Held packages were changed and -y was used without --allow-change-held-packages.\n", ErrHeld},
		{"version", "E: Version '4.11.0-1' for 'siem-demo' was not found\n", ErrVersionNotFound},
		{"package", "E: Unable to locate package nope\n", ErrNotFound},
		{"lock", "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 123 (apt-get)\n", ErrLocked},
		{"other", "E: Sub-process /usr/bin/dpkg returned an error code (1)\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := &fakeRunner{answers: []result{{stdout: "Reading package lists...\n", stderr: tt.stderr, code: 100}}}
			err := newApt(t, fr).Install(context.Background(), map[string]string{"siem-demo": "4.9.0-1"}, InstallOptions{})
			var ce *CommandError
			if !errors.As(err, &ce) || ce.ExitCode != 100 || ce.Stderr != strings.TrimSpace(tt.stderr) {
				t.Fatalf("err = %#v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.want == nil && ce.Kind != nil {
				t.Fatalf("unexpected kind %v", ce.Kind)
			}
		})
	}
	if err := newApt(t, &fakeRunner{}).Install(context.Background(), map[string]string{"x": "1 --force"}, InstallOptions{}); err == nil {
		t.Fatal("a version with a space was accepted")
	}
	if err := newApt(t, &fakeRunner{}).Install(context.Background(), map[string]string{"-o": "1"}, InstallOptions{}); err == nil {
		t.Fatal("an option-like package name was accepted")
	}
}

func TestHoldCommandAndCandidatesYum(t *testing.T) {
	apt := newApt(t, &fakeRunner{})
	if got := apt.HoldCommand(true, "a", "b").String(); got != "apt-mark hold a b" {
		t.Fatal(got)
	}
	yum, _ := New(KindYum, &fakeRunner{})
	if got := yum.HoldCommand(false, "a").String(); got != "yum versionlock delete a" {
		t.Fatal(got)
	}
}

// yumList is `yum --showduplicates list wazuh-manager` on an EL8 host with
// the Wazuh repository: dnf's metadata line, the installed version, every
// repository version (one row wrapped after a long name).
const yumList = `Last metadata expiration check: 0:41:07 ago on Tue 24 Nov 2026 00:59:12 UTC.
Installed Packages
wazuh-manager.x86_64                    4.9.0-1                     @wazuh
Available Packages
wazuh-manager.x86_64                    4.8.2-1                     wazuh
wazuh-manager.x86_64                    4.9.0-1                     wazuh
wazuh-manager.x86_64
                                        4.10.0-1                    wazuh
wazuh-manager.x86_64                    4.9.2-1                     wazuh
wazuh-manager-debuginfo.x86_64          4.10.0-1                    wazuh
`

// TestCandidatesYum: on yum hosts the installability gate is evaluated from
// yum's own list of versions (a fake yum script on PATH answering as the
// real one), not skipped.
func TestCandidatesYum(t *testing.T) {
	p := ParseYumList(yumList, "wazuh-manager")
	if p.Installed != "4.9.0-1" || p.Candidate != "4.10.0-1" || strings.Join(p.Available, " ") != "4.10.0-1 4.9.2-1 4.9.0-1 4.8.2-1" || !p.Has("4.10.0-1") || p.Has("4.11.0-1") {
		t.Fatalf("parsed %+v", p)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\n" +
		"[ \"$1 $2\" = '--showduplicates list' ] || { echo \"unexpected: $*\" >&2; exit 2; }\n" +
		"if [ \"$3\" = wazuh-manager ]; then cat '" + filepath.Join(dir, "list.txt") + "'; exit 0; fi\n" +
		"echo 'Error: No matching Packages to list' >&2; exit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "yum"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "list.txt"), []byte(yumList), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	yum, err := New(KindYum, ExecRunner{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := yum.Candidates(context.Background(), "wazuh-manager")
	if err != nil || !got.Has("4.10.0-1") || got.Installed != "4.9.0-1" {
		t.Fatalf("Candidates = %+v, %v", got, err)
	}
	if _, err := yum.Candidates(context.Background(), "wazuh-nothing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown package: %v", err)
	}
}

func TestCandidatesFake(t *testing.T) {
	fr := &fakeRunner{answers: []result{{stdout: policyLabInstalled}}}
	p, err := newApt(t, fr).Candidates(context.Background(), "siem-demo")
	if err != nil || p.Installed != "4.10.0-1" || !p.Has("4.9.0-1") {
		t.Fatalf("Candidates = %+v, %v", p, err)
	}
	fr = &fakeRunner{answers: []result{{stdout: ""}}}
	if _, err := newApt(t, fr).Candidates(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestCommandString(t *testing.T) {
	c := Command{Env: []string{"A=b c"}, Argv: []string{"dpkg-query", "-f=${Package}\t${Version}\n", "x", ""}}
	want := "'A=b c' dpkg-query '-f=${Package}\t${Version}\n' x ''"
	if got := c.String(); got != want {
		t.Fatalf("got %q", got)
	}
}

func TestNewDefaultRunner(t *testing.T) {
	m, err := New(KindApt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.run, ExecRunner{MaxOutput: process.PackageMaxOutput, SameGroup: true}) {
		t.Fatalf("default runner %#v, want the package manager's 256 KiB cap, in siemctl's process group", m.run)
	}
}

type fakeQuerier struct {
	asked []string
	have  map[string]string
	err   error
}

func (q *fakeQuerier) Installed(_ context.Context, pkgs ...string) (map[string]string, error) {
	q.asked = pkgs
	out := map[string]string{}
	for _, p := range pkgs {
		out[p] = q.have[p]
	}
	return out, q.err
}

// TestByComponent: each component maps to its package's installed version
// ("" when not installed); a package two components share is asked once,
// an unset package name is never asked, and a failed query is the error.
func TestByComponent(t *testing.T) {
	q := &fakeQuerier{have: map[string]string{"siem-indexer": "4.9.0-1", "siem-manager": "4.9.0-1"}}
	names := map[string]string{"indexer": "siem-indexer", "manager": "siem-manager", "dashboard": "siem-dashboard", "shipper": "", "agent": "siem-manager"}
	got, err := ByComponent(context.Background(), q, names)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"indexer": "4.9.0-1", "manager": "4.9.0-1", "dashboard": "", "shipper": "", "agent": "4.9.0-1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ByComponent = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(q.asked, []string{"siem-dashboard", "siem-indexer", "siem-manager"}) {
		t.Errorf("asked %q", q.asked)
	}
	q.err = errors.New("dpkg-query: database locked")
	if _, err := ByComponent(context.Background(), q, names); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("failed query = %v", err)
	}
}
