package filetree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LinkError is a path a restore refused to write through: a symlink where
// the backup had a directory, or a symlink owned by an account other than
// root (the service accounts own their config and data directories on a
// real host, so such a link is a path from the service account to root).
type LinkError struct {
	Path   string
	Reason string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s %s: refusing to write through it; check who replaced it, remove the link (and restore %s by hand from the backup) before running the rollback again", e.Path, e.Reason, e.Path)
}

// OpenDirNoFollow opens the directory abs component by component from "/"
// without following a symlink that could have been planted: a component
// for which strict reports true (a directory recorded in the backup) must be
// a real directory; any other component may be a symlink only when root or
// the running user owns it (as fs.protected_symlinks judges links). The
// caller closes the returned descriptor.
// With mkdir set, missing directories are created (0755).
func OpenDirNoFollow(abs string, strict func(p string) bool, mkdir bool) (int, error) {
	abs = filepath.Clean(abs)
	if !filepath.IsAbs(abs) {
		return -1, fmt.Errorf("%s: not an absolute path", abs)
	}
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	cur := "/"
	for _, c := range strings.Split(strings.TrimPrefix(abs, "/"), "/") {
		if c == "" {
			continue
		}
		cur = filepath.Join(cur, c)
		next, err := openDirAt(fd, c, cur, strict != nil && strict(cur))
		if mkdir && errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(fd, c, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openDirAt(fd, c, cur, strict != nil && strict(cur))
			} else {
				err = &os.PathError{Op: "mkdir", Path: cur, Err: err}
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// openDirAt opens the directory name inside dirfd (whose path is full).
func openDirAt(dirfd int, name, full string, strict bool) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW, 0)
	if err == nil {
		return fd, nil
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return -1, &os.PathError{Op: "open", Path: full, Err: err}
	}
	if strict {
		return -1, &LinkError{Path: full, Reason: "is a symlink now but was a directory when the backup was taken"}
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return -1, &LinkError{Path: full, Reason: fmt.Sprintf("is a symlink owned by uid %d, not root", st.Uid)}
	}
	fd, err = unix.Openat(dirfd, name, flags, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: full, Err: err}
	}
	return fd, nil
}

// LstatAt is fstatat without following name.
func LstatAt(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// MkdirNoFollow makes sure name inside dirfd is a real directory (creating
// it 0700 if missing) and opens it; a symlink there is a *LinkError.
func MkdirNoFollow(dirfd int, name, full string) (int, error) {
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, &os.PathError{Op: "mkdir", Path: full, Err: err}
	}
	return openDirAt(dirfd, name, full, true)
}

// applyMetaFd sets owner and mode on an open descriptor.
func applyMetaFd(fd int, e Entry) error {
	if e.UID >= 0 {
		if err := unix.Fchown(fd, e.UID, e.GID); err != nil {
			return err
		}
	}
	return unix.Fchmod(fd, e.Mode&0o7777)
}

// timesAt sets name's (never a link target's) times to e.MTime, if set.
func timesAt(dirfd int, name string, e Entry) error {
	if e.MTime == 0 {
		return nil
	}
	ts := unix.NsecToTimespec(e.MTime)
	return unix.UtimesNanoAt(dirfd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}

// WriteFileAt writes data read by fill into a fresh temporary file inside
// dirfd, applies e (owner, mode, times) on the descriptor, and renames it
// over name. A symlink at name is replaced, never followed.
func WriteFileAt(dirfd int, dirPath, name string, e Entry, fill func(*os.File) error) error {
	var fd int
	var tmp string
	for i := 0; ; i++ {
		tmp = fmt.Sprintf(".%s.siemctl-%d-%d", name, os.Getpid(), i)
		var err error
		fd, err = unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) || i > 100 {
			return &os.PathError{Op: "create", Path: filepath.Join(dirPath, tmp), Err: err}
		}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dirPath, tmp))
	err := fill(f)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = applyMetaFd(int(f.Fd()), e)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = timesAt(dirfd, tmp, e)
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return err
	}
	return nil
}

// ReadlinkAt reads the symlink name inside dirfd.
func ReadlinkAt(dirfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// ApplyMetaNoFollow sets owner and mode of the directory abs, reached
// without following symlinks (see OpenDirNoFollow).
func ApplyMetaNoFollow(abs string, e Entry, strict func(string) bool) error {
	fd, err := OpenDirNoFollow(abs, func(p string) bool { return p == abs || (strict != nil && strict(p)) }, false)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return applyMetaFd(fd, e)
}

// RemoveAllAt removes name inside dirfd (full: its path, for errors) and,
// when it is a directory, everything below it, never following a symlink.
func RemoveAllAt(dirfd int, name, full string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return &os.PathError{Op: "unlink", Path: full, Err: err}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: full, Err: err}
	}
	d := os.NewFile(uintptr(fd), full)
	names, err := d.Readdirnames(-1)
	if err != nil {
		d.Close()
		return err
	}
	for _, n := range names {
		if err := RemoveAllAt(int(d.Fd()), n, filepath.Join(full, n)); err != nil {
			d.Close()
			return err
		}
	}
	d.Close()
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "rmdir", Path: full, Err: err}
	}
	return nil
}
