package manager

import (
	"io/fs"
	"syscall"
)

func inodeOf(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ino
	}
	return 0
}
