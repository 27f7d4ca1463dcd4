package lab

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The lab's own answer to "is this port taken, and by whom", read from /proc: the lab does not
// use siemctl's host facts (internal/ops/hostfacts) for it, so a bug there cannot hide behind
// the rig that is meant to catch it.

// boundInodes are the socket inodes bound to proto/port on any address: TCP sockets listening
// (state 0A), UDP sockets bound and unconnected (state 07), from procRoot/net/{tcp,tcp6,udp,udp6}.
// ok is false when none of those files could be read.
func boundInodes(procRoot, proto string, port int) (inodes map[string]bool, ok bool) {
	state := map[string]string{"tcp": "0A", "udp": "07"}[proto]
	inodes = map[string]bool{}
	for _, f := range []string{proto, proto + "6"} {
		fh, err := os.Open(filepath.Join(procRoot, "net", f))
		if err != nil {
			continue
		}
		ok = true
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != state {
				continue
			}
			_, hexPort, found := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); !found || err != nil || int(p) != port {
				continue
			}
			if fields[9] != "0" {
				inodes[fields[9]] = true
			}
		}
		fh.Close()
	}
	return inodes, ok
}

// socketHolders names the processes with a descriptor on one of inodes ("pid 12 (python3 -m
// http.server)"), in /proc order; processes whose descriptors cannot be read are skipped.
func socketHolders(procRoot string, inodes map[string]bool) []string {
	var out []string
	ents, _ := os.ReadDir(procRoot)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(procRoot, e.Name(), "fd")
		fds, _ := os.ReadDir(fdDir)
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				cmd, _ := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
				out = append(out, fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))))
				break
			}
		}
	}
	return out
}
