package secadmin

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/siemctl/siemctl/internal/filetree"
)

// A security backup (Backup's -backup directory) swapped into the indexer's
// security config directory, as the official procedure does: the no-options
// security init then re-applies it (backup.indexer_security after the
// backup, the rollback's restore before its security init).

// BackupFiles lists the *.yml a -backup wrote into dir (sorted), and fails
// unless config.yml and internal_users.yml are among them.
func BackupFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yml") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	if !slices.Contains(out, "config.yml") || !slices.Contains(out, "internal_users.yml") {
		return out, fmt.Errorf("%s holds no complete security backup (config.yml and internal_users.yml expected, found %s)", dir, orNone(out))
	}
	return out, nil
}

// InstallBackup copies the *.yml of a security backup into the indexer's
// security config directory, keeping the existing files' owners and modes.
// The directory is reached without following a symlink the indexer's
// service account could have put there (see filetree.OpenDirNoFollow), and each file
// is renamed into place, so a symlink at a file's name is replaced, never
// written through.
func InstallBackup(from, to string) (int, error) {
	files, err := BackupFiles(from)
	if err != nil {
		return 0, err
	}
	to = filepath.Clean(to)
	dfd, err := filetree.OpenDirNoFollow(to, func(p string) bool { return p == to }, false)
	if err != nil {
		return 0, fmt.Errorf("security config dir: %w", err)
	}
	defer unix.Close(dfd)
	var dst unix.Stat_t
	if err := unix.Fstat(dfd, &dst); err != nil {
		return 0, fmt.Errorf("security config dir %s: %w", to, err)
	}
	for _, f := range files {
		src, err := os.Open(filepath.Join(from, f))
		if err != nil {
			return 0, err
		}
		e := filetree.Entry{Mode: 0o640, UID: int(dst.Uid), GID: int(dst.Gid)}
		if st, err := filetree.LstatAt(dfd, f); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			e.Mode, e.UID, e.GID = st.Mode&0o7777, int(st.Uid), int(st.Gid)
		}
		err = filetree.WriteFileAt(dfd, to, f, e, func(tmp *os.File) error {
			_, err := io.Copy(tmp, src)
			return err
		})
		src.Close()
		if err != nil {
			return 0, fmt.Errorf("install %s: %w", filepath.Join(to, f), err)
		}
	}
	return len(files), nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
