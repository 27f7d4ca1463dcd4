package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// File is one file of a package, relative to the dpkg root (the shape of emu.File).
type File struct {
	Path     string      // relative to the root, no leading slash
	Mode     fs.FileMode // permission bits; 0 means 0644
	Data     []byte      // content (ignored when Link or Source is set)
	Source   string      // non-empty: copy the content from this file (large binaries)
	Link     string      // non-empty: a symlink with this target
	Conffile bool        // listed in DEBIAN/conffiles
}

// Package is a Debian binary package to build.
type Package struct {
	Name        string
	Version     string // Debian version, e.g. 4.9.0-1
	Description string
	Depends     string
	Files       []File
	Postinst    string // maintainer scripts (shell); they get DPKG_ROOT and must prefix paths with it
	Prerm       string
	Postrm      string
}

// DebFileName is the pool name of a package.
func DebFileName(name, version string) string {
	return fmt.Sprintf("%s_%s_all.deb", name, version)
}

// BuildDeb builds p with dpkg-deb into outDir and returns the .deb path.
func BuildDeb(ctx context.Context, outDir string, p Package) (string, error) {
	if p.Name == "" || p.Version == "" {
		return "", errors.New("build deb: package name and version are required")
	}
	tree, err := os.MkdirTemp(outDir, ".build-"+p.Name+"-")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", p.Name, err)
	}
	defer os.RemoveAll(tree)
	if err := os.Chmod(tree, 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w", p.Name, err)
	}
	var conffiles []string
	for _, f := range p.Files {
		rel := filepath.Clean(strings.TrimPrefix(f.Path, "/"))
		if rel == "." || strings.HasPrefix(rel, "..") || strings.HasPrefix(rel, "DEBIAN") {
			return "", fmt.Errorf("build %s: bad file path %q", p.Name, f.Path)
		}
		dst := filepath.Join(tree, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", fmt.Errorf("build %s: %w", p.Name, err)
		}
		if f.Link != "" {
			if err := os.Symlink(f.Link, dst); err != nil {
				return "", fmt.Errorf("build %s: %w", p.Name, err)
			}
			continue
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if f.Source != "" {
			if err := copyFile(f.Source, dst, mode); err != nil {
				return "", fmt.Errorf("build %s: %w", p.Name, err)
			}
		} else if err := os.WriteFile(dst, f.Data, mode); err != nil {
			return "", fmt.Errorf("build %s: %w", p.Name, err)
		}
		if err := os.Chmod(dst, mode); err != nil { // umask
			return "", fmt.Errorf("build %s: %w", p.Name, err)
		}
		if f.Conffile {
			conffiles = append(conffiles, "/"+rel)
		}
	}
	deb := filepath.Join(tree, "DEBIAN")
	if err := os.MkdirAll(deb, 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w", p.Name, err)
	}
	desc := p.Description
	if desc == "" {
		desc = p.Name + " (siemlab)"
	}
	control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: siemlab <lab@example.invalid>\nSection: admin\nPriority: optional\n", p.Name, p.Version)
	if p.Depends != "" {
		control += "Depends: " + p.Depends + "\n"
	}
	control += "Description: " + desc + "\n Package built by siemlab for siemctl's lab.\n"
	meta := map[string]string{"control": control}
	if len(conffiles) > 0 {
		sort.Strings(conffiles)
		meta["conffiles"] = strings.Join(conffiles, "\n") + "\n"
	}
	for name, body := range map[string]string{"postinst": p.Postinst, "prerm": p.Prerm, "postrm": p.Postrm} {
		if body != "" {
			meta[name] = "#!/bin/sh\nset -e\n" + body + "\n"
		}
	}
	for name, body := range meta {
		mode := os.FileMode(0o644)
		if name != "control" && name != "conffiles" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(deb, name), []byte(body), mode); err != nil {
			return "", fmt.Errorf("build %s: %w", p.Name, err)
		}
		if err := os.Chmod(filepath.Join(deb, name), mode); err != nil {
			return "", fmt.Errorf("build %s: %w", p.Name, err)
		}
	}
	out := filepath.Join(outDir, DebFileName(p.Name, p.Version))
	if _, err := run(ctx, nil, "", "dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", tree, out); err != nil {
		return "", fmt.Errorf("build %s %s: %w", p.Name, p.Version, err)
	}
	return out, nil
}

// ScanRepo writes Packages and Packages.gz of a flat repository (every version kept).
func ScanRepo(ctx context.Context, repo string) error {
	out, err := run(ctx, nil, repo, "dpkg-scanpackages", "--multiversion", ".", "/dev/null")
	if err != nil {
		return fmt.Errorf("scan repository %s: %w", repo, err)
	}
	if err := writeFile(filepath.Join(repo, "Packages"), out, 0o644); err != nil {
		return err
	}
	if _, err := run(ctx, nil, repo, "gzip", "-9kf", "Packages"); err != nil {
		return fmt.Errorf("compress Packages: %w", err)
	}
	return nil
}

// AptRoot is an isolated apt+dpkg root (DPKG_ROOT) that installs from a local flat repository.
type AptRoot struct {
	Root string // absolute DPKG_ROOT
	Repo string // absolute flat repository directory
}

// ConfigPath is the APT_CONFIG file of the root (outside etc/apt on purpose: apt must not read it twice).
func (a *AptRoot) ConfigPath() string { return filepath.Join(a.Root, "apt-lab.conf") }

// DebArch maps a Go architecture to Debian's name for it (the host's dpkg architecture, which
// the isolated apt root uses so arch-specific packages such as siemctl's own install).
func DebArch(goarch string) string {
	switch goarch {
	case "386":
		return "i386"
	case "arm":
		return "armhf"
	case "ppc64le":
		return "ppc64el"
	case "mips64le":
		return "mips64el"
	case "mipsle":
		return "mipsel"
	}
	return goarch // amd64, arm64, s390x, riscv64, loong64, …
}

// Env returns APT_CONFIG and DPKG_ROOT for child processes.
func (a *AptRoot) Env() []string {
	return []string{"APT_CONFIG=" + a.ConfigPath(), "DPKG_ROOT=" + a.Root}
}

// Init creates the dpkg database, apt directories and the apt config. It keeps an existing database.
func (a *AptRoot) Init() error {
	if !filepath.IsAbs(a.Root) || !filepath.IsAbs(a.Repo) {
		return fmt.Errorf("apt root %q and repository %q must be absolute", a.Root, a.Repo)
	}
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "var/lib/apt/lists/partial",
		"var/cache/apt/archives/partial", "etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/sources.list.d", "var/log/apt"} {
		if err := os.MkdirAll(filepath.Join(a.Root, d), 0o755); err != nil {
			return fmt.Errorf("apt root: %w", err)
		}
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		p := filepath.Join(a.Root, f)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return fmt.Errorf("apt root: %w", err)
			}
		}
	}
	if err := writeFile(filepath.Join(a.Root, "etc/apt/sources.list"), []byte("deb [trusted=yes] file:"+a.Repo+" ./\n"), 0o644); err != nil {
		return err
	}
	r := a.Root
	conf := fmt.Sprintf(`Dir "%[1]s/";
Dir::State::status "%[1]s/var/lib/dpkg/status";
Dir::Etc::main "/dev/null";
Dir::Bin::dpkg "/usr/bin/dpkg";
APT::Architecture "%[2]s";
APT::Sandbox::User "root";
APT::Install-Recommends "false";
Acquire::Languages "none";
Acquire::CompressionTypes::Order { "gz"; };
DPkg::Options { "--root=%[1]s"; "--admindir=%[1]s/var/lib/dpkg"; "--force-script-chrootless"; "--force-not-root"; "--force-confdef"; "--force-confold"; "--log=%[1]s/var/log/dpkg.log"; };
`, r, DebArch(runtime.GOARCH))
	return writeFile(a.ConfigPath(), []byte(conf), 0o644)
}

func (a *AptRoot) env() []string {
	return append(os.Environ(), append(a.Env(), "DEBIAN_FRONTEND=noninteractive")...)
}

// Update runs apt-get update.
func (a *AptRoot) Update(ctx context.Context) error {
	if _, err := run(ctx, a.env(), "", "apt-get", "-q", "update"); err != nil {
		return fmt.Errorf("apt-get update: %w", err)
	}
	return nil
}

// Install runs apt-get install -y --allow-downgrades for each "name=version" (or name).
func (a *AptRoot) Install(ctx context.Context, pkgs ...string) error {
	args := append([]string{"-q", "-y", "--allow-downgrades", "install"}, pkgs...)
	if _, err := run(ctx, a.env(), "", "apt-get", args...); err != nil {
		return fmt.Errorf("apt-get install %s: %w", strings.Join(pkgs, " "), err)
	}
	return nil
}

// InstalledVersion returns the installed version of a package ("" when not installed).
func (a *AptRoot) InstalledVersion(ctx context.Context, pkg string) (string, error) {
	out, err := run(ctx, a.env(), "", "dpkg-query", "--admindir="+filepath.Join(a.Root, "var/lib/dpkg"), "-W", "-f=${db:Status-Status} ${Version}", pkg)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", nil // no such package
		}
		return "", fmt.Errorf("dpkg-query %s: %w", pkg, err)
	}
	status, version, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if status != "installed" {
		return "", nil
	}
	return version, nil
}

// run executes a command and returns its stdout; on failure the error carries the tail of stderr.
// Never pass secrets as args: they would be visible in the process table.
func run(ctx context.Context, env []string, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &CommandError{Cmd: name, Err: err, Output: tail(stderr.String()+stdout.String(), 1500)}
	}
	return stdout.Bytes(), nil
}

// CommandError is a failed external command.
type CommandError struct {
	Cmd    string
	Err    error
	Output string
}

func (e *CommandError) Error() string {
	if e.Output == "" {
		return fmt.Sprintf("%s: %v", e.Cmd, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", e.Cmd, e.Err, e.Output)
}

func (e *CommandError) Unwrap() error { return e.Err }

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
