package hostfacts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Usage is the usage of the filesystem holding a path, computed like df:
// used / (used + available to unprivileged users).
type Usage struct {
	Path        string  `json:"path"`    // the path asked about
	Checked     string  `json:"checked"` // the nearest existing parent actually measured
	TotalBytes  uint64  `json:"total_bytes"`
	FreeBytes   uint64  `json:"free_bytes"` // available to unprivileged users
	UsedBytes   uint64  `json:"used_bytes"`
	UsedPercent float64 `json:"used_percent"`
}

// FreePercent is 100 - UsedPercent.
func (u Usage) FreePercent() float64 { return 100 - u.UsedPercent }

// Disk measures the filesystem of path, or of its nearest existing parent
// when path does not exist yet (a data directory before install).
func Disk(path string) (Usage, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Usage{Path: path}, fmt.Errorf("disk usage of %s: %w", path, err)
	}
	p := abs
	for {
		_, err := os.Stat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Usage{Path: path}, fmt.Errorf("disk usage of %s: %w", path, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return Usage{Path: path}, fmt.Errorf("disk usage of %s: no existing parent", path)
		}
		p = parent
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		return Usage{Path: path, Checked: p}, fmt.Errorf("disk usage of %s: statfs %s: %w", path, p, err)
	}
	return usageFrom(path, p, uint64(st.Bsize), st.Blocks, st.Bfree, st.Bavail), nil
}

func usageFrom(path, checked string, bsize, blocks, bfree, bavail uint64) Usage {
	u := Usage{Path: path, Checked: checked, TotalBytes: blocks * bsize, FreeBytes: bavail * bsize}
	if bfree <= blocks {
		u.UsedBytes = (blocks - bfree) * bsize
	}
	if denom := u.UsedBytes + u.FreeBytes; denom > 0 {
		u.UsedPercent = float64(u.UsedBytes) * 100 / float64(denom)
	}
	return u
}
