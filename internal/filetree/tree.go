package filetree

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
)

// Entry is one file, directory or symlink of a copied tree.
type Entry struct {
	Path  string `json:"path"` // relative, "." for the root
	Type  string `json:"type"` // dir | file | link
	Mode  uint32 `json:"mode"` // permission bits (and setuid/setgid/sticky)
	UID   int    `json:"uid"`
	GID   int    `json:"gid"`
	Size  int64  `json:"size,omitempty"`
	SHA   string `json:"sha256,omitempty"`
	Link  string `json:"link,omitempty"`
	MTime int64  `json:"mtime_ns,omitempty"`
}

// EachTarEntry calls f for every entry of tr, checking ctx between entries; an error reading
// the stream is prefixed with what (the archive's name). f reads the entry's content from tr.
func EachTarEntry(ctx context.Context, tr *tar.Reader, what string, f func(hdr *tar.Header, tr *tar.Reader) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := f(hdr, tr); err != nil {
			return err
		}
	}
}

// Manifest describes a copied tree: what a verification compares.
type Manifest struct {
	Source  string    `json:"source"`
	Created time.Time `json:"created"`
	Files   int       `json:"files"`
	Bytes   int64     `json:"bytes"`
	Entries []Entry   `json:"entries"`
}

// ModeBits is m's permission bits with setuid, setgid and sticky in their octal places.
func ModeBits(m fs.FileMode) uint32 {
	b := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

// Owner is fi's uid and gid (-1, -1 where the platform does not say).
func Owner(fi fs.FileInfo) (int, int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

// EntryOf describes fi at rel (a link's target is left to the caller); sockets and fifos are an error.
func EntryOf(rel string, fi fs.FileInfo) (Entry, error) {
	uid, gid := Owner(fi)
	e := Entry{Path: rel, Mode: ModeBits(fi.Mode()), UID: uid, GID: gid, MTime: fi.ModTime().UnixNano()}
	switch {
	case fi.IsDir():
		e.Type = "dir"
		e.MTime = 0 // directories change as files are written: not compared
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type = "link"
	case fi.Mode().IsRegular():
		e.Type, e.Size = "file", fi.Size()
	default:
		return e, fmt.Errorf("%s: unsupported file type %v", rel, fi.Mode().Type())
	}
	return e, nil
}

// Walk calls visit for root and every entry below it, in lexical order, with its path and
// its entry (EntryOf; a link's target read).
func Walk(ctx context.Context, root string, visit func(p string, e Entry) error) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e, err := EntryOf(rel, fi)
		if err != nil {
			return err
		}
		if e.Type == "link" {
			if e.Link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		return visit(p, e)
	})
}

// Scan lists root (without hashing unless hash is set).
func Scan(ctx context.Context, root string, hash bool) (Manifest, error) {
	m := Manifest{Source: root, Entries: []Entry{}}
	err := Walk(ctx, root, func(p string, e Entry) error {
		if e.Type == "file" {
			m.Files++
			m.Bytes += e.Size
			if hash {
				var err error
				if e.SHA, err = HashFile(p); err != nil {
					return err
				}
			}
		}
		m.Entries = append(m.Entries, e)
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("scan %s: %w", root, err)
	}
	return m, nil
}

// HashFile is the hex sha256 of the file p.
func HashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Copy copies src to dst (which must not exist), preserving types,
// modes, owners and file times, hashing every file as it is read. It
// returns the manifest of src as copied. progress, if set, is called with
// the bytes copied so far.
func Copy(ctx context.Context, src, dst string, progress func(done int64)) (Manifest, error) {
	if _, err := os.Lstat(dst); err == nil {
		return Manifest{}, fmt.Errorf("copy %s: %s already exists", src, dst)
	}
	m := Manifest{Source: src, Entries: []Entry{}}
	var dirs []Entry
	var done int64
	err := Walk(ctx, src, func(p string, e Entry) error {
		target := filepath.Join(dst, e.Path)
		switch e.Type {
		case "dir":
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, e)
		case "link":
			if err := os.Symlink(e.Link, target); err != nil {
				return err
			}
			if err := os.Lchown(target, e.UID, e.GID); err != nil {
				return err
			}
		case "file":
			base := done
			var err error
			if e.SHA, err = copyFileHashed(p, target, e, func(n int64) {
				if progress != nil {
					progress(base + n)
				}
			}); err != nil {
				return err
			}
			m.Files++
			m.Bytes += e.Size
			done += e.Size
		}
		m.Entries = append(m.Entries, e)
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	// Directories last, deepest first: their modes may forbid writing.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := ApplyMeta(filepath.Join(dst, dirs[i].Path), dirs[i]); err != nil {
			return m, fmt.Errorf("copy %s: %w", src, err)
		}
	}
	return m, nil
}

// CountWriter calls progress with the bytes written so far.
type CountWriter struct {
	n        int64
	progress func(n int64)
}

func (w *CountWriter) Write(b []byte) (int, error) {
	w.n += int64(len(b))
	if w.progress != nil {
		w.progress(w.n)
	}
	return len(b), nil
}

// copyFileHashed copies src to dst and returns its sha256; progress (may
// be nil) gets the bytes of this file copied so far.
func copyFileHashed(src, dst string, e Entry, progress func(n int64)) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h, &CountWriter{progress: progress}), in)
	if err == nil && n != e.Size {
		err = fmt.Errorf("%s changed while copying (%d bytes, %d expected)", src, n, e.Size)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := ApplyMeta(dst, e); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func ApplyMeta(p string, e Entry) error {
	if e.UID >= 0 {
		if err := os.Lchown(p, e.UID, e.GID); err != nil {
			return err
		}
	}
	mode := fs.FileMode(e.Mode & 0o777)
	if e.Mode&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if e.Mode&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if e.Mode&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	if err := os.Chmod(p, mode); err != nil {
		return err
	}
	if e.MTime != 0 {
		t := time.Unix(0, e.MTime)
		if err := os.Chtimes(p, t, t); err != nil {
			return err
		}
	}
	return nil
}

// Compare reports the first differences between want and got:
// missing or extra entries, types, sizes, modes, owners, link targets, and
// content hashes when both sides have them.
func Compare(want, got Manifest) error {
	g := make(map[string]Entry, len(got.Entries))
	for _, e := range got.Entries {
		g[e.Path] = e
	}
	var diffs []string
	add := func(format string, args ...any) {
		if len(diffs) < 5 {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	seen := map[string]bool{}
	for _, w := range want.Entries {
		seen[w.Path] = true
		e, ok := g[w.Path]
		switch {
		case !ok:
			add("%s missing", w.Path)
		case e.Type != w.Type:
			add("%s is a %s, want a %s", w.Path, e.Type, w.Type)
		case e.Type == "file" && e.Size != w.Size:
			add("%s has %d bytes, want %d", w.Path, e.Size, w.Size)
		case e.Mode != w.Mode:
			add("%s mode %o, want %o", w.Path, e.Mode, w.Mode)
		case e.UID != w.UID || e.GID != w.GID:
			add("%s owner %d:%d, want %d:%d", w.Path, e.UID, e.GID, w.UID, w.GID)
		case e.Link != w.Link:
			add("%s links to %s, want %s", w.Path, e.Link, w.Link)
		case e.SHA != "" && w.SHA != "" && e.SHA != w.SHA:
			add("%s content differs (sha256 %s, want %s)", w.Path, e.SHA[:12], w.SHA[:12])
		}
	}
	extra := 0
	for _, e := range got.Entries {
		if !seen[e.Path] {
			extra++
			add("%s not in the copy's manifest", e.Path)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%d files/%d bytes vs %d files/%d bytes: %s", got.Files, got.Bytes, want.Files, want.Bytes, strings.Join(diffs, "; "))
}

// WriteJSON writes v as indented JSON to path atomically (mode 0600).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return renameio.WriteFile(path, append(b, '\n'), 0o600)
}

// ReadJSON decodes the JSON file path into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// SumsName is the checksum manifest of a run's backup directory, in
// sha256sum format ("<hex>  <name>").
const SumsName = "SHA256SUMS"

// AddSums merges name → sha256 into dir/SHA256SUMS (atomically).
func AddSums(dir string, sums map[string]string) error {
	all, err := ReadSums(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, sums)
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(all)) {
		fmt.Fprintf(&b, "%s  %s\n", all[n], n)
	}
	return renameio.WriteFile(filepath.Join(dir, SumsName), []byte(b.String()), 0o600)
}

// ReadSums reads dir/SHA256SUMS (name → hex sha256).
func ReadSums(dir string) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, SumsName))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		sum, name, ok := strings.Cut(strings.TrimSpace(line), "  ")
		if ok {
			out[name] = sum
		}
	}
	return out, nil
}

// VerifySum checks dir/name against dir/SHA256SUMS.
func VerifySum(dir, name string) error {
	sums, err := ReadSums(dir)
	if err != nil {
		return fmt.Errorf("checksums of %s: %w", dir, err)
	}
	want, ok := sums[name]
	if !ok {
		return fmt.Errorf("%s is not in %s", name, filepath.Join(dir, SumsName))
	}
	got, err := HashFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s: sha256 %s does not match %s (%s): the backup is damaged", filepath.Join(dir, name), got, SumsName, want)
	}
	return nil
}

// Bytes sums the regular files under root; files vanishing meanwhile
// (a running indexer merges segments) are ignored.
func Bytes(ctx context.Context, root string) (int64, error) {
	n, _, err := BytesSince(ctx, root, time.Time{})
	return n, err
}

// BytesSince sums the regular files under root, and those modified
// after since (OpenSearch segments are immutable: the files written since
// the last snapshot are what an incremental snapshot copies).
func BytesSince(ctx context.Context, root string, since time.Time) (n, newer int64, err error) {
	err = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if de.Type().IsRegular() {
			if fi, err := de.Info(); err == nil {
				n += fi.Size()
				if fi.ModTime().After(since) {
					newer += fi.Size()
				}
			}
		}
		return nil
	})
	return n, newer, err
}
