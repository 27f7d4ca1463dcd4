package rundata

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/siemctl/siemctl/internal/filetree"
)

// --- set-aside data directories (upgrade prune) -----------------------------------

// asideRE is the exact name suffix of a set-aside data directory:
// ".siemctl-" and a lowercased run id.
var asideRE = regexp.MustCompile(`^\.siemctl-(\d{8}t\d{6}z-[0-9a-f]{6})$`)

// AsidePath is where restore.indexer_data (internal/steps) sets a run's data directory aside.
func AsidePath(dataDir, runID string) string {
	return filepath.Clean(dataDir) + ".siemctl-" + strings.ToLower(runID)
}

// AsideDir is an entry next to the data directory named like a set-aside
// data directory. Refused says why prune leaves it alone ("" when it may go).
type AsideDir struct {
	Path    string `json:"path"`
	RunID   string `json:"run_id,omitempty"`
	Bytes   int64  `json:"bytes"`
	Refused string `json:"refused,omitempty"`
}

// AsideDirs lists the entries of the data directory's parent whose name is
// <base>.siemctl-<something>: those matching the exact pattern and being
// real directories may be pruned; a symlink, a file or another name is
// listed as refused. protect gives the reason to keep a run's directory
// ("" to let it go); RunID is spelt as the engine writes it.
func AsideDirs(ctx context.Context, dataDir string, protect func(runID string) string) ([]AsideDir, error) {
	dataDir = filepath.Clean(dataDir)
	parent, base := filepath.Dir(dataDir), filepath.Base(dataDir)
	ents, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return []AsideDir{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []AsideDir{}
	for _, e := range ents {
		suffix, ok := strings.CutPrefix(e.Name(), base)
		if !ok || !strings.HasPrefix(suffix, ".siemctl-") {
			continue
		}
		a := AsideDir{Path: filepath.Join(parent, e.Name())}
		m := asideRE.FindStringSubmatch(suffix)
		switch {
		case m == nil:
			a.Refused = "not named " + base + ".siemctl-<run-id>: not a set-aside data directory of siemctl"
		case e.Type()&fs.ModeSymlink != 0:
			a.Refused = "a symlink: never followed nor removed"
		case !e.IsDir():
			a.Refused = "not a directory"
		}
		if m != nil {
			id := m[1] // 20261120t100000z-3d4e5f: the engine's id, lowercased
			a.RunID = id[:8] + "T" + id[9:15] + "Z" + id[16:]
			if a.Refused == "" && protect != nil {
				a.Refused = protect(a.RunID)
			}
		}
		if a.Refused == "" || e.IsDir() {
			if a.Bytes, err = filetree.Bytes(ctx, a.Path); err != nil {
				return nil, err
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// RemoveAside removes a set-aside data directory without following a link:
// its parent is reached with filetree.OpenDirNoFollow, the entry must still be a
// real directory with the exact name, and the tree is removed entry by
// entry with unlinkat (a symlink inside is removed, never followed).
func RemoveAside(dataDir string, a AsideDir) error {
	parent, name := filepath.Dir(a.Path), filepath.Base(a.Path)
	base := filepath.Base(filepath.Clean(dataDir))
	if parent != filepath.Dir(filepath.Clean(dataDir)) || !strings.HasPrefix(name, base) || !asideRE.MatchString(strings.TrimPrefix(name, base)) {
		return fmt.Errorf("%s is not a set-aside data directory of %s: left alone", a.Path, dataDir)
	}
	pfd, err := filetree.OpenDirNoFollow(parent, nil, false)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	st, err := filetree.LstatAt(pfd, name)
	if err != nil {
		return &os.PathError{Op: "lstat", Path: a.Path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return &filetree.LinkError{Path: a.Path, Reason: "is not a directory (a symlink is never followed)"}
	}
	return filetree.RemoveAllAt(pfd, name, a.Path)
}
