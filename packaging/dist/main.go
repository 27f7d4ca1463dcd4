// Command dist builds siemctl's release artifacts from a built binary (make dist runs it):
//
//	go run ./packaging/dist -bin bin/siemctl -version v1.2.3 -arch amd64 -out dist
//
// It writes into -out a .deb and an .rpm (made with nfpm as a Go library: no packaging tool is
// needed on the build host), a tarball of the same files, and SHA256SUMS over the three. The
// packages hold /usr/bin/siemctl, one man page per command, bash/zsh/fish completion (all made
// by the binary itself, so they match it), the snapshot service and timer, the example
// /etc/siemctl/siemctl.yaml as a conffile, and /var/lib/siemctl.
package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager

	"github.com/siemctl/siemctl/ansible"
	"github.com/siemctl/siemctl/packaging"
)

// Options of one dist build.
type Options struct {
	Bin     string    // the siemctl binary built for Arch
	GenBin  string    // the siemctl binary run to write man pages and completions ("": Bin; another GOARCH: a host build)
	Version string    // siemctl's version (git describe), e.g. v1.2.3 or v1.2.3-4-gabcdef0-dirty
	Arch    string    // GOARCH of Bin
	Out     string    // output directory
	Docs    string    // directory holding LICENSE, README.md and CHANGELOG.md
	MTime   time.Time // time of every file in the artifacts (the commit's, for reproducible builds)
}

func main() {
	var o Options
	var mtime string
	flag.StringVar(&o.Bin, "bin", "bin/siemctl", "siemctl binary to package")
	flag.StringVar(&o.GenBin, "gen-bin", "", "siemctl built for this host, run to write man pages and completions (default: -bin)")
	flag.StringVar(&o.Version, "version", "", "siemctl version (git describe --tags)")
	flag.StringVar(&o.Arch, "arch", "", "GOARCH the binary was built for")
	flag.StringVar(&o.Out, "out", "dist", "output directory")
	flag.StringVar(&o.Docs, "docs", ".", "directory with LICENSE, README.md, CHANGELOG.md")
	flag.StringVar(&mtime, "date", "", "RFC 3339 time stamped on every file (default: now)")
	flag.Parse()
	o.MTime = time.Now().UTC().Truncate(time.Second)
	if mtime != "" {
		t, err := time.Parse(time.RFC3339, mtime)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dist: -date: %v\n", err)
			os.Exit(2)
		}
		o.MTime = t
	}
	arts, err := Build(context.Background(), o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dist: %v\n", err)
		os.Exit(1)
	}
	for _, a := range arts {
		fmt.Println(a)
	}
}

// PackageVersion maps siemctl's version to one that dpkg and rpm both order correctly: the
// leading v dropped, git describe's "-N-gSHA[-dirty]" tail as "+gitN.gSHA[.dirty]", and a
// version without a release tag as 0.0.0+git….
func PackageVersion(v string) (string, error) {
	v = strings.TrimPrefix(v, "v")
	if v == "" || v == "dev" {
		return "", errors.New("no version: pass -version (make dist does: git describe --tags)")
	}
	m := regexp.MustCompile(`^(\d+\.\d+\.\d+(?:[~.][0-9A-Za-z.]+)?)(?:-(\d+)-(g[0-9a-f]+))?(-dirty)?$`).FindStringSubmatch(v)
	if m != nil {
		out := m[1]
		if m[2] != "" {
			out += "+git" + m[2] + "." + m[3]
		}
		if m[4] != "" {
			if m[2] == "" {
				out += "+git0"
			}
			out += ".dirty"
		}
		return out, nil
	}
	if regexp.MustCompile(`^[0-9a-f]{7,40}(-dirty)?$`).MatchString(v) { // git describe --always without a tag
		return "0.0.0+git." + strings.ReplaceAll(v, "-", "."), nil
	}
	return "", fmt.Errorf("version %q: want a release tag like v1.2.3 (git describe --tags)", v)
}

// Build writes the artifacts and returns their paths (SHA256SUMS last).
func Build(ctx context.Context, o Options) ([]string, error) {
	pv, err := PackageVersion(o.Version)
	if err != nil {
		return nil, err
	}
	if o.Arch == "" {
		return nil, errors.New("no -arch (the binary's GOARCH)")
	}
	if fi, err := os.Stat(o.Bin); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("-bin %s: not an executable siemctl (make build first)", o.Bin)
	}
	stage, err := os.MkdirTemp("", "siemctl-dist-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	contents, err := stageFiles(ctx, o, stage)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	info := &nfpm.Info{
		Name:          "siemctl",
		Arch:          o.Arch,
		Platform:      "linux",
		Version:       pv,
		VersionSchema: "none",
		Release:       "1",
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    "siemctl maintainers <siemctl@example.invalid>",
		Vendor:        "siemctl",
		Homepage:      "https://github.com/siemctl/siemctl",
		License:       "Apache-2.0",
		Description: "check, upgrade and roll back a single-host SIEM stack\n" +
			"One static binary for an OpenSearch indexer, a Wazuh-4.x-like manager, a dashboard and a\n" +
			"Filebeat shipper: health checks, gated upgrades with rollback, snapshots and diffs.",
		MTime: o.MTime,
		Overridables: nfpm.Overridables{
			Contents:   contents,
			Recommends: []string{"systemd"},
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(stage, "scripts/postinst"),
				PreRemove:   filepath.Join(stage, "scripts/prerm"),
				PostRemove:  filepath.Join(stage, "scripts/postrm"),
			},
		},
	}
	var arts []string
	for _, format := range []string{"deb", "rpm"} {
		p, err := nfpm.Get(format)
		if err != nil {
			return nil, err
		}
		i := nfpm.WithDefaults(info)
		if err := nfpm.PrepareForPackager(i, format); err != nil {
			return nil, fmt.Errorf("%s: %w", format, err)
		}
		name := filepath.Join(o.Out, p.ConventionalFileName(i))
		if err := writeAtomic(name, func(w io.Writer) error { return p.Package(i, w) }); err != nil {
			return nil, fmt.Errorf("%s: %w", format, err)
		}
		arts = append(arts, name)
	}
	tgz := filepath.Join(o.Out, fmt.Sprintf("siemctl_%s_linux_%s.tar.gz", pv, o.Arch))
	if err := writeAtomic(tgz, func(w io.Writer) error { return tarball(w, contents, "siemctl_"+pv+"_linux_"+o.Arch, o.MTime) }); err != nil {
		return nil, fmt.Errorf("tarball: %w", err)
	}
	arts = append(arts, tgz)
	sums := filepath.Join(o.Out, "SHA256SUMS")
	if err := writeAtomic(sums, func(w io.Writer) error { return sha256sums(w, arts) }); err != nil {
		return nil, err
	}
	return append(arts, sums), nil
}

// stageFiles writes what the binary generates (man pages, completions), the units, the example
// configuration and the maintainer scripts into stage, and returns the packages' contents.
func stageFiles(ctx context.Context, o Options, stage string) (files.Contents, error) {
	bin, err := filepath.Abs(o.Bin)
	if err != nil {
		return nil, err
	}
	genBin := bin
	if o.GenBin != "" {
		if genBin, err = filepath.Abs(o.GenBin); err != nil {
			return nil, err
		}
	}
	gen := func(out string, args ...string) error {
		cmd := exec.CommandContext(ctx, genBin, args...)
		cmd.Env = append(os.Environ(), "SIEMCTL_CONFIG=/dev/null", "NO_COLOR=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if out != "" {
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			defer f.Close()
			cmd.Stdout = f
		}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("siemctl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
		return nil
	}
	for _, d := range []string{"man", "completion", "systemd", "scripts", "etc", "ansible"} {
		if err := os.MkdirAll(filepath.Join(stage, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := gen("", "docs", "man", filepath.Join(stage, "man")); err != nil {
		return nil, err
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if err := gen(filepath.Join(stage, "completion", sh), "completion", sh); err != nil {
			return nil, err
		}
	}
	svc, err := packaging.Service("/usr/bin/siemctl")
	if err != nil {
		return nil, err
	}
	timer, err := packaging.Files.ReadFile("siemctl-snapshot.timer")
	if err != nil {
		return nil, err
	}
	example, err := packaging.Files.ReadFile("siemctl.yaml")
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{
		"systemd/siemctl-snapshot.service": svc, "systemd/siemctl-snapshot.timer": timer, "etc/siemctl.yaml": example,
		"scripts/postinst": []byte(postinst), "scripts/prerm": []byte(prerm), "scripts/postrm": []byte(postrm),
	} {
		if err := os.WriteFile(filepath.Join(stage, name), data, 0o644); err != nil {
			return nil, err
		}
	}

	file := func(src, dst string, mode fs.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode, MTime: o.MTime}}
	}
	c := files.Contents{
		file(bin, "/usr/bin/siemctl", 0o755),
		file(filepath.Join(stage, "systemd/siemctl-snapshot.service"), "/usr/lib/systemd/system/siemctl-snapshot.service", 0o644),
		file(filepath.Join(stage, "systemd/siemctl-snapshot.timer"), "/usr/lib/systemd/system/siemctl-snapshot.timer", 0o644),
		file(filepath.Join(stage, "completion/bash"), "/usr/share/bash-completion/completions/siemctl", 0o644),
		file(filepath.Join(stage, "completion/zsh"), "/usr/share/zsh/vendor-completions/_siemctl", 0o644),
		file(filepath.Join(stage, "completion/fish"), "/usr/share/fish/vendor_completions.d/siemctl.fish", 0o644),
		{Source: filepath.Join(stage, "etc/siemctl.yaml"), Destination: "/etc/siemctl/siemctl.yaml", Type: files.TypeConfigNoReplace,
			FileInfo: &files.ContentFileInfo{Mode: 0o640, MTime: o.MTime}},
		{Destination: "/var/lib/siemctl", Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o750, MTime: o.MTime}},
	}
	for _, doc := range []string{"LICENSE", "README.md", "CHANGELOG.md"} {
		src := filepath.Join(o.Docs, doc)
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("%s: %w", doc, err)
		}
		c = append(c, file(src, "/usr/share/doc/siemctl/"+doc, 0o644))
	}
	for _, pb := range ansible.All() {
		data, err := ansible.Files.ReadFile(pb)
		if err != nil {
			return nil, err
		}
		src := filepath.Join(stage, "ansible", pb)
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(src, data, 0o644); err != nil {
			return nil, err
		}
		c = append(c, file(src, ansible.Dir+"/"+pb, 0o644))
	}
	pages, err := filepath.Glob(filepath.Join(stage, "man", "*.1"))
	if err != nil || len(pages) == 0 {
		return nil, fmt.Errorf("siemctl docs man wrote no pages into %s", filepath.Join(stage, "man"))
	}
	sort.Strings(pages)
	for _, p := range pages {
		gz := p + ".gz"
		if err := writeAtomic(gz, func(w io.Writer) error { return gzipFile(w, p, o.MTime) }); err != nil {
			return nil, err
		}
		c = append(c, file(gz, "/usr/share/man/man1/"+filepath.Base(gz), 0o644))
	}
	return c, nil
}

// Maintainer scripts. They touch systemd only on a live system: not under DPKG_ROOT (an
// isolated root, like the lab's) and not where systemd is not the running init.
const (
	postinst = `#!/bin/sh
set -e
if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
`
	prerm = `#!/bin/sh
set -e
# deb: "remove"/"upgrade"; rpm: the number of versions left (0 on erase).
case "${1:-}" in
remove|0)
	if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
		systemctl disable --now siemctl-snapshot.timer >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
`
	postrm = `#!/bin/sh
set -e
if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
# The configuration and /var/lib/siemctl (snapshots, journals) are kept on
# removal and on purge: they are the operator's records.
exit 0
`
)

func gzipFile(w io.Writer, src string, mtime time.Time) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime = mtime
	if _, err := io.Copy(zw, in); err != nil {
		return err
	}
	return zw.Close()
}

// tarball writes the packages' files under top/ with the same paths (usr/bin/siemctl, …).
func tarball(w io.Writer, contents files.Contents, top string, mtime time.Time) error {
	zw := gzip.NewWriter(w)
	zw.ModTime = mtime
	tw := tar.NewWriter(zw)
	for _, c := range contents {
		name := top + c.Destination
		if c.Type == files.TypeDir {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(c.FileInfo.Mode), ModTime: mtime}); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(c.Source)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(c.FileInfo.Mode), Size: int64(len(data)), ModTime: mtime}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// sha256sums writes "HEX  NAME" lines (sha256sum -c reads them) for the files, by base name.
func sha256sums(w io.Writer, paths []string) error {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), filepath.Base(p)); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes path through a temp file in the same directory and renames it into place.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
