package shipper

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

	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/manager"
)

// The Filebeat module of the manager's alerts (its ingest pipeline and
// fields): which one a manager version uses, and its installation from the
// module tarball. The step kind shipper.module (internal/steps) decides
// when and fetches the tarball.

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

// MaxModule bounds a module tarball and what it unpacks to.
const MaxModule = 32 << 20

// InstallModule unpacks the tarball's top directory name (and nothing
// else) into dir/.name.siemctl-new, then swaps it in for dir/name by rename
// inside dir, which is reached without following a symlink. Only regular
// files and directories are accepted; absolute names, "..", links and
// devices refuse the whole tarball before anything is swapped.
func InstallModule(ctx context.Context, tarball []byte, dir, name string) (int, error) {
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
			if total > MaxModule {
				return fmt.Errorf("unpacks to more than %d bytes", MaxModule)
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
