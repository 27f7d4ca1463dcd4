package filetree

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteArchive writes a tar.gz of paths (absolute names without the
// leading slash) atomically and returns the manifest of its content, the
// archive's sha256, and the paths that did not exist.
func WriteArchive(ctx context.Context, dst string, paths []string, progress func(done int64)) (Manifest, string, []string, error) {
	man := Manifest{Source: strings.Join(paths, " "), Entries: []Entry{}}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".configs-*.tmp")
	if err != nil {
		return man, "", nil, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	gz := gzip.NewWriter(io.MultiWriter(tmp, h))
	tw := tar.NewWriter(gz)
	var missing []string
	seen := map[string]bool{}
	for _, root := range paths {
		if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, root)
			continue
		}
		err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if seen[p] {
				if de.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			seen[p] = true
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			e, err := EntryOf(strings.TrimPrefix(p, "/"), fi)
			if err != nil {
				return nil // sockets, fifos: not configuration
			}
			if e.Type == "link" {
				if e.Link, err = os.Readlink(p); err != nil {
					return err
				}
			}
			hdr, err := tar.FileInfoHeader(fi, e.Link)
			if err != nil {
				return err
			}
			hdr.Name = e.Path
			if e.Type == "dir" {
				hdr.Name += "/"
			}
			hdr.Uname, hdr.Gname = "", ""
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if e.Type == "file" {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				fh := sha256.New()
				base := man.Bytes
				n, err := io.Copy(io.MultiWriter(tw, fh, &CountWriter{progress: func(n int64) {
					if progress != nil {
						progress(base + n)
					}
				}}), f)
				f.Close()
				if err != nil {
					return err
				}
				if n != e.Size {
					return fmt.Errorf("%s changed while archiving", p)
				}
				e.SHA = hex.EncodeToString(fh.Sum(nil))
				man.Files++
				man.Bytes += e.Size
			}
			man.Entries = append(man.Entries, e)
			return nil
		})
		if err != nil {
			tmp.Close()
			return man, "", nil, fmt.Errorf("archive %s: %w", root, err)
		}
	}
	if err := tw.Close(); err != nil {
		tmp.Close()
		return man, "", nil, err
	}
	if err := gz.Close(); err != nil {
		tmp.Close()
		return man, "", nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return man, "", nil, err
	}
	if err := tmp.Close(); err != nil {
		return man, "", nil, err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return man, "", nil, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return man, "", nil, err
	}
	return man, hex.EncodeToString(h.Sum(nil)), missing, nil
}

// SaveArchive writes paths into dir/archive (WriteArchive) and its manifest beside it, records
// both in dir's SHA256SUMS and verifies the archive against it. It returns the manifest, the
// archive's sha256 and the paths that were not there.
func SaveArchive(ctx context.Context, dir, archive, manifest string, paths []string, progress func(done int64)) (Manifest, string, []string, error) {
	man, sum, missing, err := WriteArchive(ctx, filepath.Join(dir, archive), paths, progress)
	if err != nil {
		return man, "", nil, err
	}
	if err := SaveManifest(dir, manifest, man, map[string]string{archive: sum}); err != nil {
		return man, "", nil, err
	}
	return man, sum, missing, VerifySum(dir, archive)
}

// SaveManifest writes man as dir/name and records its sha256 in dir's SHA256SUMS with the
// other sums given.
func SaveManifest(dir, name string, man Manifest, sums map[string]string) error {
	if err := WriteJSON(filepath.Join(dir, name), man); err != nil {
		return err
	}
	msum, err := HashFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if sums == nil {
		sums = map[string]string{}
	}
	sums[name] = msum
	return AddSums(dir, sums)
}

// ExtractArchive restores every entry of a configs archive to its absolute
// path. Files are written next to their destination and renamed over it
// only after their sha256 matched the manifest. No symlink is followed: a
// directory of the backup that is a symlink now, or a foreign-owned symlink
// above the backed-up paths, fails the restore naming the path, before
// anything is written (see OpenDirNoFollow).
func ExtractArchive(ctx context.Context, archive string, man Manifest) (int, error) {
	want := map[string]Entry{}
	for _, e := range man.Entries {
		want[e.Path] = e
	}
	strict := func(p string) bool { return want[strings.TrimPrefix(p, "/")].Type == "dir" }
	// Check every directory of the backup first, so a replaced one stops
	// the restore before any file is written.
	for _, e := range man.Entries {
		if e.Type != "dir" {
			continue
		}
		fd, err := OpenDirNoFollow("/"+e.Path, strict, false)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		unix.Close(fd)
	}
	f, err := os.Open(archive)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", archive, err)
	}
	var dirs []Entry
	n := 0
	err = EachTarEntry(ctx, tar.NewReader(gz), archive, func(hdr *tar.Header, tr *tar.Reader) error {
		name := strings.TrimSuffix(hdr.Name, "/")
		if strings.Contains(name, "..") {
			return fmt.Errorf("%s: unsafe entry %q", archive, hdr.Name)
		}
		e, ok := want[name]
		if !ok {
			return fmt.Errorf("%s: entry %s is not in the manifest", archive, name)
		}
		dst := "/" + name
		base := filepath.Base(dst)
		pfd, err := OpenDirNoFollow(filepath.Dir(dst), strict, true)
		if err != nil {
			return fmt.Errorf("restore %s: %w", dst, err)
		}
		defer unix.Close(pfd)
		switch hdr.Typeflag {
		case tar.TypeDir:
			var fd int
			if fd, err = MkdirNoFollow(pfd, base, dst); err == nil {
				unix.Close(fd)
				dirs = append(dirs, e)
			}
		case tar.TypeSymlink:
			if cur, rerr := ReadlinkAt(pfd, base); rerr == nil && cur == hdr.Linkname {
				break
			}
			if err = unix.Unlinkat(pfd, base, 0); errors.Is(err, unix.ENOENT) {
				err = nil
			}
			if err == nil {
				err = unix.Symlinkat(hdr.Linkname, pfd, base)
			}
			if err == nil {
				err = unix.Fchownat(pfd, base, e.UID, e.GID, unix.AT_SYMLINK_NOFOLLOW)
			}
		case tar.TypeReg:
			e.MTime = hdr.ModTime.UnixNano()
			err = WriteFileAt(pfd, filepath.Dir(dst), base, e, func(tmp *os.File) error {
				h := sha256.New()
				if _, err := io.Copy(io.MultiWriter(tmp, h), tr); err != nil {
					return err
				}
				if sum := hex.EncodeToString(h.Sum(nil)); sum != e.SHA {
					return fmt.Errorf("%s: sha256 %s does not match the manifest (%s)", name, sum, e.SHA)
				}
				return nil
			})
			if err == nil {
				n++
			}
		}
		if err != nil {
			return fmt.Errorf("restore %s: %w", dst, err)
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		dst := "/" + dirs[i].Path
		if err := ApplyMetaNoFollow(dst, dirs[i], strict); err != nil {
			return n, fmt.Errorf("restore %s: %w", dst, err)
		}
	}
	return n, nil
}
