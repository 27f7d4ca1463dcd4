// Package packages reads and changes installed package versions through the
// host's package manager: dpkg/apt on Debian-like hosts (fully supported:
// installed versions, candidates, exact-version install, downgrade, hold) and
// rpm/yum on RHEL-like hosts (installed versions, exact-version install and
// downgrade, versionlock hold; no candidate listing).
//
// Commands run through a Runner and inherit the environment, so an isolated
// apt/dpkg root given by APT_CONFIG and DPKG_ROOT (the lab) is honoured
// without special flags; dpkg-query additionally gets --admindir under
// DPKG_ROOT. Every mutating method has a *Command twin returning the exact
// argv it would run, for plans and --dry-run.
package packages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	debversion "github.com/knqyf263/go-deb-version"

	"github.com/siemctl/siemctl/internal/process"
)

// Kinds of package manager.
const (
	KindAuto = "auto"
	KindApt  = "apt"
	KindYum  = "yum"
)

// Sentinel errors; match with errors.Is.
var (
	ErrNotFound            = errors.New("package not found")
	ErrVersionNotFound     = errors.New("package version not available")
	ErrDowngradeNotAllowed = errors.New("downgrade not allowed")
	ErrHeld                = errors.New("package is held")
	ErrLocked              = errors.New("package database is locked")
	ErrUnsupported         = errors.New("not supported by this package manager")
)

// CommandError is a package-manager command that failed.
type CommandError struct {
	Command  Command
	ExitCode int
	Stderr   string // the last lines of stderr (or stdout when stderr was empty)
	Kind     error  // one of the sentinels when recognised, else nil
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("%s: exit status %d", strings.Join(e.Command.Argv, " "), e.ExitCode)
	if e.Kind != nil {
		msg += ": " + e.Kind.Error()
	}
	if e.Stderr != "" {
		msg += ": " + strings.ReplaceAll(e.Stderr, "\n", "; ")
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Kind }

// Options configure a Manager. Zero values mean the defaults.
type Options struct {
	// Env is extra NAME=value environment for every command (e.g.
	// APT_CONFIG and DPKG_ROOT of an isolated root), on top of the
	// inherited environment.
	Env []string
	// Getenv reads the inherited environment (default os.Getenv).
	Getenv func(string) string
	// LookPath finds programs for kind "auto" (default exec.LookPath).
	LookPath func(string) (string, error)
}

// Manager runs one kind of package manager.
type Manager struct {
	kind     string
	run      Runner
	env      []string
	dpkgRoot string
}

// New returns a Manager for kind auto, apt or yum. Auto picks apt when
// dpkg-query is on PATH, else yum when rpm is. A nil runner means
// ExecRunner{MaxOutput: process.PackageMaxOutput, SameGroup: true}: the
// tail of the output is what an error shows, and a cancel never SIGKILLs
// the dpkg or rpm the package manager started.
func New(kind string, runner Runner, opts ...Options) (*Manager, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if runner == nil {
		runner = ExecRunner{MaxOutput: process.PackageMaxOutput, SameGroup: true}
	}
	switch kind {
	case "", KindAuto:
		if _, err := o.LookPath("dpkg-query"); err == nil {
			kind = KindApt
		} else if _, err := o.LookPath("rpm"); err == nil {
			kind = KindYum
		} else {
			return nil, fmt.Errorf("packages: neither dpkg-query nor rpm found on PATH: %w", ErrUnsupported)
		}
	case KindApt, KindYum:
	default:
		return nil, fmt.Errorf("packages: unknown package manager %q (use auto, apt or yum)", kind)
	}
	m := &Manager{kind: kind, run: runner, env: slices.Clone(o.Env)}
	m.dpkgRoot = o.Getenv("DPKG_ROOT")
	for _, e := range o.Env {
		if v, ok := strings.CutPrefix(e, "DPKG_ROOT="); ok {
			m.dpkgRoot = v
		}
	}
	return m, nil
}

// Kind is the resolved kind: apt or yum.
func (m *Manager) Kind() string { return m.kind }

func (m *Manager) exec(ctx context.Context, c Command) ([]byte, []byte, int, error) {
	env := append(slices.Clone(m.env), c.Env...)
	return m.run.Run(ctx, env, c.Argv[0], c.Argv[1:]...) // its errors name the program
}

// execOK runs c and returns its stdout; a non-zero exit is a *CommandError.
func (m *Manager) execOK(ctx context.Context, c Command) ([]byte, error) {
	stdout, stderr, code, err := m.exec(ctx, c)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, m.fail(c, code, stdout, stderr)
	}
	return stdout, nil
}

func (m *Manager) fail(c Command, code int, stdout, stderr []byte) error {
	return &CommandError{Command: c, ExitCode: code, Stderr: process.Tail(string(stdout), string(stderr), 5), Kind: classify(string(stderr) + "\n" + string(stdout))}
}

// classify recognises the package managers' well-known failures.
func classify(out string) error {
	switch {
	case strings.Contains(out, "Packages were downgraded and -y was used without --allow-downgrades"):
		return ErrDowngradeNotAllowed
	case strings.Contains(out, "Held packages were changed and -y was used without --allow-change-held-packages"):
		return ErrHeld
	case strings.Contains(out, "' was not found") && strings.Contains(out, "E: Version '"):
		return ErrVersionNotFound
	case strings.Contains(out, "Unable to locate package"), strings.Contains(out, "No package ") && strings.Contains(out, " available"),
		strings.Contains(out, "No match for argument"), strings.Contains(out, "No Match for argument"):
		return ErrNotFound
	case strings.Contains(out, "Could not get lock"), strings.Contains(out, "Unable to acquire the dpkg frontend lock"),
		strings.Contains(out, "Existing lock "):
		return ErrLocked
	}
	return nil
}

// InstalledCommand is the query Installed runs.
func (m *Manager) InstalledCommand(pkgs ...string) Command {
	if m.kind == KindYum {
		return Command{Argv: append([]string{"rpm", "-q", "--qf", `%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\n`}, pkgs...)}
	}
	argv := []string{"dpkg-query"}
	if m.dpkgRoot != "" {
		argv = append(argv, "--admindir="+filepath.Join(m.dpkgRoot, "var/lib/dpkg"))
	}
	argv = append(argv, "-W", "-f=${Package}\t${Status}\t${Version}\n")
	return Command{Argv: append(argv, pkgs...)}
}

// Installed returns the installed version of each package, "" for a package
// that is not installed (unknown, removed, or only its config files left).
func (m *Manager) Installed(ctx context.Context, pkgs ...string) (map[string]string, error) {
	out := make(map[string]string, len(pkgs))
	for _, p := range pkgs {
		out[p] = ""
	}
	if len(pkgs) == 0 {
		return out, nil
	}
	c := m.InstalledCommand(pkgs...)
	stdout, stderr, code, err := m.exec(ctx, c)
	if err != nil {
		return nil, err
	}
	var found map[string]string
	if m.kind == KindYum {
		// rpm -q exits with the number of packages not installed.
		if code != 0 && strings.TrimSpace(string(stderr)) != "" {
			return nil, m.fail(c, code, stdout, stderr)
		}
		found = ParseRPMQuery(string(stdout))
	} else {
		// dpkg-query -W exits 1 when some package is unknown, and says so
		// on stderr; anything else is a real failure.
		if code != 0 && !onlyNoPackagesFound(string(stderr)) {
			return nil, m.fail(c, code, stdout, stderr)
		}
		found = ParseDpkgQuery(string(stdout))
	}
	for p := range out {
		out[p] = found[p]
	}
	return out, nil
}

func onlyNoPackagesFound(stderr string) bool {
	for _, l := range strings.Split(stderr, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "no packages found matching") {
			return false
		}
	}
	return true
}

// ParseDpkgQuery parses `dpkg-query -W -f='${Package}\t${Status}\t${Version}\n'`
// output into package → version, keeping only installed packages (status
// "<want> ok installed": install or hold).
func ParseDpkgQuery(out string) map[string]string {
	res := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(f) != 3 {
			continue
		}
		st := strings.Fields(f[1])
		if len(st) != 3 || st[1] != "ok" || st[2] != "installed" {
			continue
		}
		name, _, _ := strings.Cut(f[0], ":") // drop an architecture qualifier
		res[name] = strings.TrimSpace(f[2])
	}
	return res
}

// ParseRPMQuery parses `rpm -q --qf '%{NAME}\t[E:]V-R\n'` output; "package x
// is not installed" lines are skipped.
func ParseRPMQuery(out string) map[string]string {
	res := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		name, ver, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok || name == "" || ver == "" {
			continue
		}
		res[name] = ver
	}
	return res
}

// Update refreshes the package lists (apt-get update / yum makecache).
func (m *Manager) Update(ctx context.Context) error {
	c := m.UpdateCommand()
	_, err := m.execOK(ctx, c)
	return err
}

// UpdateCommand is what Update runs.
func (m *Manager) UpdateCommand() Command {
	if m.kind == KindYum {
		return Command{Argv: []string{"yum", "-q", "makecache"}}
	}
	return Command{Env: []string{"DEBIAN_FRONTEND=noninteractive"}, Argv: []string{"apt-get", "-q", "update"}}
}

// Candidates returns the package manager's view of a package (apt-cache
// policy; yum --showduplicates list): installed version, candidate, and
// every available version, newest first. An unknown package is ErrNotFound.
func (m *Manager) Candidates(ctx context.Context, pkg string) (Policy, error) {
	if m.kind == KindYum {
		return m.yumCandidates(ctx, pkg)
	}
	c := Command{Argv: []string{"apt-cache", "policy", pkg}}
	stdout, err := m.execOK(ctx, c)
	if err != nil {
		return Policy{Package: pkg}, err
	}
	pols, err := ParsePolicy(string(stdout))
	if err != nil {
		return Policy{Package: pkg}, fmt.Errorf("apt-cache policy %s: %w", pkg, err)
	}
	for _, p := range pols {
		if p.Package == pkg {
			return p, nil
		}
	}
	return Policy{Package: pkg}, fmt.Errorf("apt-cache policy %s: %w", pkg, ErrNotFound)
}

// yumCandidates runs `yum --showduplicates list PKG`: its "Installed
// Packages" and "Available Packages" sections (dnf prints the same). "No
// matching Packages" is ErrNotFound.
func (m *Manager) yumCandidates(ctx context.Context, pkg string) (Policy, error) {
	c := Command{Argv: []string{"yum", "--showduplicates", "list", pkg}}
	stdout, stderr, code, err := m.exec(ctx, c)
	if err != nil {
		return Policy{Package: pkg}, err
	}
	if code != 0 {
		if strings.Contains(string(stderr)+string(stdout), "No matching Packages") {
			return Policy{Package: pkg}, fmt.Errorf("yum list %s: %w", pkg, ErrNotFound)
		}
		return Policy{Package: pkg}, m.fail(c, code, stdout, stderr)
	}
	p := ParseYumList(string(stdout), pkg)
	if p.Installed == "" && len(p.Available) == 0 {
		return p, fmt.Errorf("yum list %s: %w", pkg, ErrNotFound)
	}
	return p, nil
}

// Madison lists a package's available versions and where each comes from
// (apt-cache madison), newest first. Not supported for yum.
func (m *Manager) Madison(ctx context.Context, pkg string) ([]MadisonEntry, error) {
	if m.kind == KindYum {
		return nil, fmt.Errorf("madison %s: %w", pkg, ErrUnsupported)
	}
	c := Command{Argv: []string{"apt-cache", "madison", pkg}}
	stdout, err := m.execOK(ctx, c)
	if err != nil {
		return nil, err
	}
	entries := ParseMadison(string(stdout))
	if len(entries) == 0 {
		return nil, fmt.Errorf("apt-cache madison %s: %w", pkg, ErrNotFound)
	}
	return entries, nil
}

// InstallOptions tune Install.
type InstallOptions struct {
	// AllowDowngrades permits installing an older version than the
	// installed one (apt --allow-downgrades; yum downgrade).
	AllowDowngrades bool
	// KeepConfig keeps locally modified conffiles without prompting
	// (dpkg --force-confdef --force-confold).
	KeepConfig bool
	// AllowHeld permits changing a held package (apt
	// --allow-change-held-packages).
	AllowHeld bool
}

// InstallCommands are the commands Install runs for pkgs (package →
// exact version), in order. For yum a downgrade is a separate command and
// needs the installed versions: pass them as installed (may be nil for apt).
func (m *Manager) InstallCommands(pkgs map[string]string, opts InstallOptions, installed map[string]string) []Command {
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	slices.Sort(names)
	if m.kind == KindYum {
		var up, down []string
		for _, p := range names {
			spec := p + "-" + pkgs[p]
			if opts.AllowDowngrades && installed[p] != "" && CompareRPM(pkgs[p], installed[p]) < 0 {
				down = append(down, spec)
			} else {
				up = append(up, spec)
			}
		}
		var cmds []Command
		if len(up) > 0 {
			cmds = append(cmds, Command{Argv: append([]string{"yum", "install", "-y"}, up...)})
		}
		if len(down) > 0 {
			cmds = append(cmds, Command{Argv: append([]string{"yum", "downgrade", "-y"}, down...)})
		}
		return cmds
	}
	argv := []string{"apt-get", "install", "-y", "-q"}
	if opts.AllowDowngrades {
		argv = append(argv, "--allow-downgrades")
	}
	if opts.AllowHeld {
		argv = append(argv, "--allow-change-held-packages")
	}
	if opts.KeepConfig {
		argv = append(argv, "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold")
	}
	for _, p := range names {
		argv = append(argv, p+"="+pkgs[p])
	}
	return []Command{{Env: []string{"DEBIAN_FRONTEND=noninteractive"}, Argv: argv}}
}

// Install installs exact versions (package → version, as the package manager
// spells them, e.g. "4.10.0-1"). A downgrade without AllowDowngrades is a
// *CommandError matching ErrDowngradeNotAllowed; an unknown version matches
// ErrVersionNotFound.
func (m *Manager) Install(ctx context.Context, pkgs map[string]string, opts InstallOptions) error {
	if len(pkgs) == 0 {
		return nil
	}
	for p, v := range pkgs {
		if p == "" || v == "" || strings.ContainsAny(p+v, " \t\n=") || strings.HasPrefix(p, "-") {
			return fmt.Errorf("install: bad package/version %q=%q", p, v)
		}
	}
	var installed map[string]string
	if m.kind == KindYum && opts.AllowDowngrades {
		names := make([]string, 0, len(pkgs))
		for p := range pkgs {
			names = append(names, p)
		}
		var err error
		if installed, err = m.Installed(ctx, names...); err != nil {
			return err
		}
	}
	for _, c := range m.InstallCommands(pkgs, opts, installed) {
		if _, err := m.execOK(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// HoldCommand is what Hold (hold=true) or Unhold runs.
func (m *Manager) HoldCommand(hold bool, pkgs ...string) Command {
	if m.kind == KindYum {
		verb := "delete"
		if hold {
			verb = "add"
		}
		return Command{Argv: append([]string{"yum", "versionlock", verb}, pkgs...)}
	}
	verb := "unhold"
	if hold {
		verb = "hold"
	}
	return Command{Argv: append([]string{"apt-mark", verb}, pkgs...)}
}

// Hold pins packages at their installed version (apt-mark hold / yum
// versionlock add).
func (m *Manager) Hold(ctx context.Context, pkgs ...string) error {
	return m.hold(ctx, true, pkgs)
}

// Unhold releases held packages.
func (m *Manager) Unhold(ctx context.Context, pkgs ...string) error {
	return m.hold(ctx, false, pkgs)
}

func (m *Manager) hold(ctx context.Context, hold bool, pkgs []string) error {
	if len(pkgs) == 0 {
		return nil
	}
	c := m.HoldCommand(hold, pkgs...)
	_, err := m.execOK(ctx, c)
	return err
}

// Compare compares two versions with the Manager's rules (Debian or RPM):
// -1 when a < b, 0 when equal, 1 when a > b.
func (m *Manager) Compare(a, b string) int {
	if m.kind == KindYum {
		return CompareRPM(a, b)
	}
	return CompareDeb(a, b)
}

// CompareDeb compares Debian versions ([epoch:]upstream[-revision]). Strings
// that are not valid Debian versions compare as plain strings, after every
// valid version.
func CompareDeb(a, b string) int {
	va, errA := debversion.NewVersion(a)
	vb, errB := debversion.NewVersion(b)
	switch {
	case errA == nil && errB == nil:
		return sign(va.Compare(vb)) // the library returns a magnitude
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// Upstream strips the epoch and the package revision: "1:4.10.0-1" → "4.10.0".
func Upstream(v string) string {
	if i := strings.IndexByte(v, ':'); i >= 0 && !strings.ContainsAny(v[:i], ".-") {
		v = v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	return v
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// Querier is what ByComponent asks (a *Manager; a fake in tests).
type Querier interface {
	Installed(ctx context.Context, pkgs ...string) (map[string]string, error)
}

// ByComponent is a component's installed version: names maps each
// component (indexer, manager, dashboard, shipper) to its package, and the
// answer maps each component to the installed version ("" when the package
// is not installed). This is the one definition of "the version of a
// component as installed"; the running version is what its API reports.
func ByComponent(ctx context.Context, q Querier, names map[string]string) (map[string]string, error) {
	pkgs := make([]string, 0, len(names))
	for _, p := range names {
		if p != "" {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	byPkg, err := q.Installed(ctx, slices.Compact(pkgs)...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	for comp, p := range names {
		out[comp] = byPkg[p]
	}
	return out, nil
}
