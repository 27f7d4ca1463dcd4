// Package e2e is the harness of siemctl's end-to-end tests: it builds the
// siemctl and siemlab binaries once per test binary, brings up a real lab
// (OpenSearch, private systemd, apt/dpkg root, emulators) in a temp dir, runs
// siemctl against it as a user would, and tears the lab down by PID when the
// test ends.
//
// End-to-end tests live in files with the build tag `e2e`, are named
// TestE2E…, and are skipped without that tag. They need root. With
// SIEMCTL_IT_REQUIRED=1 (CI) a missing prerequisite fails instead of skipping.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
)

var (
	buildMu  sync.Mutex
	binDir   string
	fromEnv  bool
	binUsers int
)

// Binaries returns the paths of siemctl and siemlab: $SIEMCTL_E2E_BIN when
// set (make test-e2e points it at bin/), else a build into a temp dir shared
// by the tests that run at the same time and removed when the last of them
// ends.
func Binaries(t testing.TB) (siemctl, siemlab string) {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if binDir == "" {
		if d := os.Getenv("SIEMCTL_E2E_BIN"); d != "" {
			binDir, fromEnv = d, true
		} else {
			d, err := build()
			if err != nil {
				t.Fatal(err)
			}
			binDir = d
		}
	}
	binUsers++
	t.Cleanup(func() {
		buildMu.Lock()
		defer buildMu.Unlock()
		binUsers--
		if binUsers == 0 && !fromEnv {
			os.RemoveAll(binDir)
			binDir = ""
		}
	})
	return filepath.Join(binDir, "siemctl"), filepath.Join(binDir, "siemlab")
}

func build() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "siemctl-e2e-bin-")
	if err != nil {
		return "", err
	}
	_ = os.Chmod(dir, 0o755)
	for name, pkg := range map[string]string{"siemctl": "./cmd/siemctl", "siemlab": "./lab/cmd/siemlab"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("go build %s: %v\n%s", name, err, out)
		}
	}
	return dir, nil
}

func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the module root")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")), nil
}

// Require skips (or, with SIEMCTL_IT_REQUIRED=1, fails) when the lab cannot
// run here.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, bin := range []string{"dpkg-deb", "dpkg-scanpackages", "apt-get", "unshare", "setpriv", "java"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if _, err := os.Stat("/lib/systemd/systemd"); err != nil {
		missing = append(missing, "/lib/systemd/systemd")
	}
	if len(missing) == 0 {
		return
	}
	msg := "e2e prerequisites missing: " + strings.Join(missing, ", ") + " (run scripts/install-deps.sh as root)"
	if os.Getenv("SIEMCTL_IT_REQUIRED") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// ProfileEnv names the environment variable that selects the lab layout of every e2e lab (siem,
// the default, or wazuh): `make test-e2e` runs the suites once per profile.
const ProfileEnv = "SIEMCTL_E2E_PROFILE"

// Profile returns the lab profile $SIEMCTL_E2E_PROFILE names (default siem), failing the test on
// an unknown one.
func Profile(t testing.TB) lab.Profile {
	t.Helper()
	p, err := lab.ProfileFor(os.Getenv(ProfileEnv))
	if err != nil {
		t.Fatalf("%s: %v", ProfileEnv, err)
	}
	return p
}

// Lab is a running lab for one test.
type Lab struct {
	Dir string
	Env []string // SIEMCTL_CONFIG, APT_CONFIG, DPKG_ROOT, …
	// Profile is the lab's layout: its package, unit and path names (tests never spell siem- or
	// wazuh- names themselves).
	Profile lab.Profile
	siemctl string
	siemlab string
	t       testing.TB
	tried   []string // lab directories brought up (or tried), all downed at the end
}

// Options for Up.
type Options struct {
	PortOffset int    // distinct per test package so labs never collide
	Version    string // default 4.9.0
	Profile    string // default $SIEMCTL_E2E_PROFILE, else siem
	Syslog     bool   // siemlab up --syslog (a syslog listener where the profile's ossec.conf has none)
	Topology   string // siemlab up --topology (default single)
}

// Up brings up a lab and registers its teardown.
func Up(t testing.TB, opts Options) *Lab {
	t.Helper()
	Require(t)
	siemctl, siemlab := Binaries(t)
	base, err := os.MkdirTemp("", "siemctl-e2e-lab-")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.OpenParents(base); err != nil { // the indexer runs unprivileged and must traverse it
		t.Fatal(err)
	}
	dir := filepath.Join(base, "lab")
	prof := Profile(t)
	if opts.Profile != "" {
		if prof, err = lab.ProfileFor(opts.Profile); err != nil {
			t.Fatal(err)
		}
	}
	l := &Lab{Dir: dir, Profile: prof, siemctl: siemctl, siemlab: siemlab, t: t}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, d := range l.tried {
			out, err := exec.CommandContext(ctx, siemlab, "down", "--dir", d).CombinedOutput()
			if err != nil {
				t.Errorf("siemlab down: %v\n%s", err, out)
			}
		}
		if !t.Failed() || os.Getenv("SIEMCTL_E2E_KEEP") == "" {
			os.RemoveAll(base)
		} else {
			t.Logf("kept lab files in %s", base)
		}
	})
	shift, err := lab.PortShift()
	if err != nil {
		t.Fatal(err)
	}
	// A second try in a fresh directory when up fails: a lab component that fails at start on a
	// loaded machine (e.g. its port taken for a moment by an outgoing connection's ephemeral port)
	// is the machine's, not the code under test's; a second failure fails the test.
	var start time.Time
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			dir = filepath.Join(base, fmt.Sprintf("lab-%d", attempt))
			l.Dir = dir
		}
		l.tried = append(l.tried, dir)
		args := []string{"up", "--dir", dir, "--port-offset", fmt.Sprint(opts.PortOffset + shift), "--profile", prof.Name}
		if opts.Syslog {
			args = append(args, "--syslog")
		}
		if opts.Version != "" {
			args = append(args, "--version", opts.Version)
		}
		if opts.Topology != "" {
			args = append(args, "--topology", opts.Topology)
		}
		// 20 minutes: a first lab on a fresh machine also builds Filebeat (make test-e2e builds it before).
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		start = time.Now()
		cmd := exec.CommandContext(ctx, siemlab, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("siemlab up (second try): %v\n%s", err, out.String())
		}
		t.Logf("siemlab up failed, trying once more in a fresh directory: %v\n%s", err, out.String())
	}
	t.Logf("%s lab up in %s (%s)", prof.Name, time.Since(start).Round(time.Millisecond), dir)
	l.Env = labEnv(dir)
	return l
}

// labEnv is the environment of siemctl runs against the lab (or host) in dir.
func labEnv(dir string) []string {
	return []string{
		"SIEMCTL_CONFIG=" + filepath.Join(dir, "siemctl.yaml"),
		"APT_CONFIG=" + filepath.Join(dir, "root", "apt-lab.conf"),
		"DPKG_ROOT=" + filepath.Join(dir, "root"),
		"NO_COLOR=1",
	}
}

// OnHost returns a view of a distributed lab whose siemctl runs act on one of its hosts
// (DIR/hosts/<host>: its siemctl.yaml and dpkg root, as its env file sets them).
func (l *Lab) OnHost(t testing.TB, host string) *Lab {
	c := *l
	c.t = t
	c.Env = labEnv(filepath.Join(l.Dir, "hosts", host))
	return &c
}

// Result of one siemctl run.
type Result struct {
	Stdout, Stderr string
	Code           int
	Took           time.Duration
}

// Siemctl runs siemctl with the lab's environment.
func (l *Lab) Siemctl(args ...string) Result {
	l.t.Helper()
	return l.run(l.siemctl, nil, args...)
}

// SiemctlStdin runs siemctl with stdin.
func (l *Lab) SiemctlStdin(stdin string, args ...string) Result {
	l.t.Helper()
	return l.run(l.siemctl, strings.NewReader(stdin), args...)
}

// Siemlab runs siemlab against this lab's directory, e.g. Siemlab("fault", "cluster-red").
func (l *Lab) Siemlab(verb string, args ...string) Result {
	l.t.Helper()
	return l.run(l.siemlab, nil, append([]string{verb, "--dir", l.Dir}, args...)...)
}

// MustSiemlab runs siemlab and fails the test on a non-zero exit.
func (l *Lab) MustSiemlab(verb string, args ...string) Result {
	l.t.Helper()
	r := l.Siemlab(verb, args...)
	if r.Code != 0 {
		l.t.Fatalf("siemlab %s %v: exit %d\n%s\n%s", verb, args, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// SiemlabBackground starts siemlab against this lab's directory and leaves it running (flow send,
// flow probe), its output going to stdout and stderr. stop sends it SIGTERM and waits for its
// exit; it runs when the test ends too.
func (l *Lab) SiemlabBackground(stdout, stderr io.Writer, verb string, args ...string) (stop func()) {
	l.t.Helper()
	cmd := exec.Command(l.siemlab, append([]string{verb, "--dir", l.Dir}, args...)...)
	cmd.Env = append(os.Environ(), l.Env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("siemlab %s %v: %v", verb, args, err)
	}
	stop = func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	l.t.Cleanup(stop)
	return stop
}

// Shell runs a bash script on a host of a distributed lab as its operator would: the host's env
// file (DIR/hosts/<host>/env: its siemctl.yaml, apt and dpkg) sourced, siemctl on PATH.
func (l *Lab) Shell(host, script string) Result {
	l.t.Helper()
	c := *l
	c.Env = append(slices.Clone(l.Env), "PATH="+filepath.Dir(l.siemctl)+":"+os.Getenv("PATH"), "NO_COLOR=1")
	return c.run("bash", nil, "-c", `. "$1" && `+script, "bash", filepath.Join(l.Dir, "hosts", host, "env"))
}

func (l *Lab) run(bin string, stdin *strings.Reader, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), l.Env...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	r := Result{Stdout: o.String(), Stderr: e.String(), Took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		l.t.Fatalf("run %s %v: %v", filepath.Base(bin), args, err)
	}
	return r
}

// Eventually retries fn until it returns nil or the timeout passes (for
// state that converges, e.g. alerts reaching the index).
func Eventually(t testing.TB, timeout, every time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reached after %s: %v", timeout, err)
		}
		time.Sleep(every)
	}
}

// For returns a view of the lab bound to t, for use inside subtests (a
// failure must stop the subtest, not its parent).
func (l *Lab) For(t testing.TB) *Lab {
	c := *l
	c.t = t
	return &c
}

// Root is the lab's dpkg root (where every component's files are).
func (l *Lab) Root() string { return filepath.Join(l.Dir, "root") }

// Path is a path under the lab's root, e.g. l.Path(l.Profile.InstallDir, "etc/ossec.conf").
func (l *Lab) Path(rel ...string) string { return filepath.Join(append([]string{l.Root()}, rel...)...) }

// StateDir is siemctl's state_dir in the lab: the profile's default under the root (the lab's
// siemctl.yaml sets no state_dir).
func (l *Lab) StateDir() string { return l.Path("var/lib/siemctl") }
