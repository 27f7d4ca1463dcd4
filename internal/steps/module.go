package steps

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/packages"
)

// FilebeatModule is the Filebeat module a range of manager versions uses.
type FilebeatModule struct {
	From    string // first manager version using it
	Tarball string // module tarball name without .tar.gz, {module} in shipper.module_source
	Dir     string // the directory it holds, installed as <shipper home_dir>/module/<Dir>
}

// FilebeatModules maps manager versions to the Filebeat module of the
// Wazuh installation assistant (install_functions/installVariables.sh per
// tag): wazuh-filebeat-0.4 up to 4.14.1, 0.5 from 4.14.2 (the alerts
// pipeline changed then). Sorted by From. Versions older than the first
// entry are not known here: the step says so instead of guessing.
var FilebeatModules = []FilebeatModule{
	{From: "4.8.0", Tarball: "wazuh-filebeat-0.4", Dir: "wazuh"},
	{From: "4.14.2", Tarball: "wazuh-filebeat-0.5", Dir: "wazuh"},
}

// ModuleFor returns the module of manager version v (upstream, e.g. 4.10.0).
func ModuleFor(v string) (FilebeatModule, bool) {
	mv, err := manager.ParseVersion(v)
	if err != nil {
		return FilebeatModule{}, false
	}
	var out FilebeatModule
	found := false
	for _, m := range FilebeatModules {
		if from, err := manager.ParseVersion(m.From); err == nil && !mv.Less(from) {
			out, found = m, true
		}
	}
	return out, found
}

// maxModule bounds a module tarball and what it unpacks to.
const maxModule = 32 << 20

type moduleParams struct {
	versionParam `yaml:",inline"`
}

func (p *moduleParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	v := packages.Upstream(pl.version(p.which(), "manager"))
	src, dir := "<shipper.module_source>", "<shipper.home_dir>/module"
	if c := pl.cfg(); c != nil {
		src, dir = c.Shipper.ModuleSource, filepath.Join(c.Shipper.HomeDir, "module")
	}
	return []string{"when the Filebeat module of manager " + v + " differs from the other version's (" + moduleTable() + ")",
		"fetch " + src + " ({module} = that module), unpack it (regular files and directories only) next to " + dir + " and swap it in"}
}

func moduleTable() string {
	var parts []string
	for _, m := range FilebeatModules {
		parts = append(parts, m.From+"+: "+m.Tarball)
	}
	return strings.Join(parts, ", ")
}

func moduleKind() Kind {
	return engine.Define(Spec[*moduleParams]{Name: "shipper.module",
		New: func() *moduleParams { return &moduleParams{} }, Run: runModule,
		Skip: func(_ context.Context, env Env, p *moduleParams) (string, bool, error) {
			_, reason, err := moduleChange(env, p)
			if err != nil || reason == "" {
				return "", false, err
			}
			return reason, true, nil
		}})
}

// moduleChange returns the module to install for p's version, or why
// nothing is installed.
func moduleChange(env Env, p *moduleParams) (FilebeatModule, string, error) {
	d := env.Deps()
	c := d.Config.Shipper
	if c.ModuleSource == "" {
		return FilebeatModule{}, "shipper.module_source is not set: the shipper's module is not managed here", nil
	}
	if c.HomeDir == "" {
		return FilebeatModule{}, "shipper.home_dir is not set: there is no module directory to update", nil
	}
	this, err := recordedVersions(env, p.previous())
	if err != nil {
		return FilebeatModule{}, "", err
	}
	other, err := recordedVersions(env, !p.previous())
	if err != nil {
		return FilebeatModule{}, "", err
	}
	v, o := packages.Upstream(this["manager"]), packages.Upstream(other["manager"])
	if v == "" || o == "" {
		return FilebeatModule{}, "", fmt.Errorf("no previous and target manager versions recorded: cannot pick the Filebeat module")
	}
	want, ok := ModuleFor(v)
	have, ok2 := ModuleFor(o)
	switch {
	case !ok || !ok2:
		return FilebeatModule{}, fmt.Sprintf("no Filebeat module known for manager %s or %s (known from %s): update %s by hand as Wazuh's upgrade guide says",
			o, v, FilebeatModules[0].From, filepath.Join(c.HomeDir, "module")), nil
	case want.Tarball == have.Tarball:
		return FilebeatModule{}, fmt.Sprintf("the Filebeat module is %s for both manager %s and %s: unchanged", want.Tarball, o, v), nil
	}
	return want, "", nil
}

func runModule(ctx context.Context, env Env, p *moduleParams) (engine.Outcome, error) {
	d := env.Deps()
	m, reason, err := moduleChange(env, p)
	if err != nil {
		return engine.Outcome{}, err
	}
	if reason != "" {
		return engine.Outcome{Message: reason}, nil
	}
	src := strings.ReplaceAll(d.Config.Shipper.ModuleSource, "{module}", m.Tarball)
	body, err := fetchCapped(ctx, d, src, maxModule)
	if err != nil {
		return engine.Outcome{}, err
	}
	dir := filepath.Join(d.Config.Shipper.HomeDir, "module")
	n, err := installModule(ctx, body, dir, m.Dir)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("module %s from %s: %w", m.Tarball, src, err)
	}
	return engine.Outcome{Message: fmt.Sprintf("Filebeat module %s installed in %s (%d files)", m.Tarball, filepath.Join(dir, m.Dir), n)}, nil
}

// installModule unpacks the tarball's top directory name (and nothing
// else) into dir/.name.siemctl-new, then swaps it in for dir/name by rename
// inside dir, which is reached without following a symlink. Only regular
// files and directories are accepted; absolute names, "..", links and
// devices refuse the whole tarball before anything is swapped.
func installModule(ctx context.Context, tarball []byte, dir, name string) (int, error) {
	dfd, err := filetree.OpenDirNoFollow(dir, nil, false)
	if err != nil {
		return 0, err
	}
	defer unix.Close(dfd)
	newBase, oldBase := "."+name+".siemctl-new", "."+name+".siemctl-old"
	staging := filepath.Join(dir, newBase)
	if err := os.RemoveAll(staging); err != nil {
		return 0, err
	}
	if err := unix.Mkdirat(dfd, newBase, 0o755); err != nil {
		return 0, fmt.Errorf("mkdir %s: %w", staging, err)
	}
	n, err := unpackModule(ctx, tarball, staging, name)
	if err == nil && n == 0 {
		err = fmt.Errorf("the tarball holds nothing under %s/", name)
	}
	if err != nil {
		os.RemoveAll(staging)
		return 0, err
	}
	if err := os.RemoveAll(filepath.Join(dir, oldBase)); err != nil {
		return 0, err
	}
	if _, err := filetree.LstatAt(dfd, name); err == nil {
		if err := unix.Renameat(dfd, name, dfd, oldBase); err != nil {
			os.RemoveAll(staging)
			return 0, fmt.Errorf("set %s aside: %w", filepath.Join(dir, name), err)
		}
	}
	if err := unix.Renameat(dfd, newBase, dfd, name); err != nil {
		return 0, fmt.Errorf("swap in %s: %w (the old module is in %s)", filepath.Join(dir, name), err, filepath.Join(dir, oldBase))
	}
	return n, os.RemoveAll(filepath.Join(dir, oldBase))
}

func unpackModule(ctx context.Context, tarball []byte, staging, name string) (int, error) {
	gz, err := gzip.NewReader(bytes.NewReader(tarball))
	if err != nil {
		return 0, fmt.Errorf("not a gzip tarball: %w", err)
	}
	var total int64
	n := 0
	err = filetree.EachTarEntry(ctx, tar.NewReader(gz), "read tarball", func(hdr *tar.Header, tr *tar.Reader) error {
		clean := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if path.IsAbs(hdr.Name) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(hdr.Name, "\\") {
			return fmt.Errorf("unsafe entry %q", hdr.Name)
		}
		rel, ok := strings.CutPrefix(clean, name+"/")
		if clean == name {
			rel, ok = "", true
		}
		if !ok {
			return nil // another module or a top-level file: not ours to install
		}
		dst := filepath.Join(staging, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if rel == "" {
				return nil
			}
			return os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			total += hdr.Size
			if total > maxModule {
				return fmt.Errorf("unpacks to more than %d bytes", maxModule)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, hdr.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				n++
			}
			return err
		}
		return fmt.Errorf("entry %q is not a regular file or directory (type %q): refused", hdr.Name, hdr.Typeflag)
	})
	return n, err
}
