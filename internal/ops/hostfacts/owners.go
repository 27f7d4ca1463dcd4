package hostfacts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Process is a process holding a socket: its PID and command line.
type Process struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

func (p Process) String() string {
	if p.Command == "" {
		return fmt.Sprintf("pid %d", p.PID)
	}
	return fmt.Sprintf("pid %d (%s)", p.PID, p.Command)
}

// Holder is who listens on a port: the sockets' processes, found through
// their inodes in /proc/<pid>/fd. Unreadable is set when some process's
// descriptors could not be read (siemctl not root): an empty Processes then
// does not mean nobody.
type Holder struct {
	Proto      string    `json:"proto"`
	Port       int       `json:"port"`
	Processes  []Process `json:"processes"`
	Unreadable bool      `json:"unreadable,omitempty"`
}

// Describe is "pid 123 (python3 -m http.server 13200)", several joined, or
// "a process siemctl cannot see (run it as root)".
func (h Holder) Describe() string {
	if len(h.Processes) == 0 {
		if h.Unreadable {
			return "a process siemctl cannot see (run it as root to name it)"
		}
		return "no process found"
	}
	parts := make([]string, len(h.Processes))
	for i, p := range h.Processes {
		parts[i] = p.String()
	}
	return strings.Join(parts, ", ")
}

// PIDs are the holders' PIDs.
func (h Holder) PIDs() []int {
	out := make([]int, len(h.Processes))
	for i, p := range h.Processes {
		out[i] = p.PID
	}
	return out
}

// Holders names the processes listening on proto/port (one /proc scan for
// all ports asked): the one home of "who holds this port" (the ports
// verdict, the diagnosis of a unit that cannot bind; the lab reads its own).
func (l Listening) Holders(ctx context.Context, procRoot, proto string, ports ...int) (map[int]Holder, error) {
	want := map[uint64]int{}
	out := map[int]Holder{}
	for _, p := range ports {
		out[p] = Holder{Proto: proto, Port: p, Processes: []Process{}}
		for _, s := range l.Sockets {
			if s.Proto == proto && s.Port == p && s.Inode != 0 {
				want[s.Inode] = p
			}
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	owners, unreadable, err := SocketOwners(ctx, procRoot, want)
	if err != nil {
		return out, err
	}
	for inode, port := range want {
		h := out[port]
		for _, pr := range owners[inode] {
			if !slices.ContainsFunc(h.Processes, func(q Process) bool { return q.PID == pr.PID }) {
				h.Processes = append(h.Processes, pr)
			}
		}
		h.Unreadable = h.Unreadable || unreadable
		slices.SortFunc(h.Processes, func(a, b Process) int { return a.PID - b.PID })
		out[port] = h
	}
	return out, nil
}

// SocketOwners maps socket inodes to the processes that hold them, read
// from procRoot/<pid>/fd links ("socket:[12345]"). unreadable reports that
// some process's descriptors could not be read (permission).
func SocketOwners(ctx context.Context, procRoot string, inodes map[uint64]int) (owners map[uint64][]Process, unreadable bool, err error) {
	owners = map[uint64][]Process{}
	unreadable, err = scanFDs(ctx, procRoot, func(pid int, links []string) {
		var found []uint64
		for _, link := range links {
			if !strings.HasPrefix(link, "socket:[") {
				continue
			}
			ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64)
			if err != nil {
				continue
			}
			if _, ok := inodes[ino]; ok && !slices.Contains(found, ino) {
				found = append(found, ino)
			}
		}
		if len(found) == 0 {
			return
		}
		p := Process{PID: pid, Command: CommandLine(procRoot, pid)}
		for _, ino := range found {
			owners[ino] = append(owners[ino], p)
		}
	})
	if err != nil {
		return nil, false, fmt.Errorf("socket owners: %w", err)
	}
	return owners, unreadable, nil
}

// FileHolders are the processes that have a file open (any of paths: the
// file as each mount namespace names it), read from procRoot/<pid>/fd links,
// sorted by PID: who holds a lock file (an OpenSearch node.lock).
func FileHolders(ctx context.Context, procRoot string, paths ...string) (holders []Process, unreadable bool, err error) {
	holders = []Process{}
	unreadable, err = scanFDs(ctx, procRoot, func(pid int, links []string) {
		for _, l := range links {
			if slices.Contains(paths, l) {
				holders = append(holders, Process{PID: pid, Command: CommandLine(procRoot, pid)})
				return
			}
		}
	})
	if err != nil {
		return nil, false, fmt.Errorf("file holders: %w", err)
	}
	slices.SortFunc(holders, func(a, b Process) int { return a.PID - b.PID })
	return holders, unreadable, nil
}

// scanFDs calls each with every process's descriptor links (one /proc
// scan); unreadable reports a process whose descriptors could not be read.
func scanFDs(ctx context.Context, procRoot string, each func(pid int, links []string)) (unreadable bool, err error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return unreadable, err
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fdDir := filepath.Join(procRoot, e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				unreadable = true
			}
			continue // gone meanwhile, or not ours to read
		}
		links := make([]string, 0, len(fds))
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil {
				links = append(links, link)
			}
		}
		each(pid, links)
	}
	return unreadable, nil
}

// CommandLine is the process's command line (NULs as spaces, at most 160
// characters), or its comm when the command line is empty.
func CommandLine(procRoot string, pid int) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cmdline"))
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if err != nil || s == "" {
		c, _ := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm"))
		s = strings.TrimSpace(string(c))
	}
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// JudgeOwners names each listening port's holder and marks it Foreign
// when none of its processes belongs to the component's unit (pids by
// component: the unit's control group; a component without an entry is
// not judged, nor a port whose holder siemctl cannot see).
func (v *PortsVerdict) JudgeOwners(holders map[int]Holder, pids map[string][]int) {
	for i, p := range v.Ports {
		h, ok := holders[p.Port]
		if !p.Listening || !ok || len(h.Processes) == 0 {
			continue
		}
		hc := h
		v.Ports[i].Holder = &hc
		own, known := pids[p.Component()]
		if !known {
			continue
		}
		v.Ports[i].Foreign = !slices.ContainsFunc(h.Processes, func(pr Process) bool { return slices.Contains(own, pr.PID) })
	}
}

// Foreign returns the ports held by a process that is not the component's.
func (v PortsVerdict) Foreign() []PortState {
	var out []PortState
	for _, p := range v.Ports {
		if p.Foreign {
			out = append(out, p)
		}
	}
	return out
}

// Owners is the port-owner verdict over the host: it asks holders who listens on v's listening
// ports and processes each port's component's unit PIDs (known false: not judged), then
// JudgeOwners. The one home of "a foreign process holds the component's port": the health check
// ports, the upgrade's gate.ports and the diagnosis of a unit that will not start.
func (v *PortsVerdict) Owners(ctx context.Context, holders func(ctx context.Context, ports []int) (map[int]Holder, error),
	processes func(ctx context.Context, component string) (pids []int, known bool)) error {
	var ports []int
	for _, p := range v.Ports {
		if p.Listening {
			ports = append(ports, p.Port)
		}
	}
	if len(ports) == 0 || holders == nil {
		return nil
	}
	hs, err := holders(ctx, ports)
	if err != nil {
		return err
	}
	pids := map[string][]int{}
	if processes != nil {
		for _, p := range v.Ports {
			c := p.Component()
			if _, done := pids[c]; done {
				continue
			}
			if ps, known := processes(ctx, c); known {
				pids[c] = ps
			}
		}
	}
	v.JudgeOwners(hs, pids)
	return nil
}

// HostHolders names who listens on TCP ports of this host (/proc): Owners' holders.
func HostHolders(ctx context.Context, ports []int) (map[int]Holder, error) {
	l, err := ListeningPorts(ctx)
	if err != nil {
		return nil, err
	}
	return l.Holders(ctx, "/proc", "tcp", ports...)
}
