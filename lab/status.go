package lab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// PortStatus is one of the lab's ports.
type PortStatus struct {
	Name      string `json:"name"`
	Proto     string `json:"proto"`
	Port      int    `json:"port"`
	Listening bool   `json:"listening"`
}

// Status is what `siemlab status` shows.
type Status struct {
	Dir          string            `json:"dir"`
	ID           string            `json:"id"`
	Host         string            `json:"host,omitempty"`    // a distributed lab's host
	Address      string            `json:"address,omitempty"` // its own loopback address
	Profile      string            `json:"profile"`
	Packages     []string          `json:"packages"` // in start order
	SystemdPID   int               `json:"systemd_pid"`
	SystemdAlive bool              `json:"systemd_alive"`
	Units        []UnitState       `json:"units"`
	Ports        []PortStatus      `json:"ports"`
	Versions     map[string]string `json:"versions"`
	Cluster      *ClusterHealth    `json:"cluster,omitempty"`
	ClusterError string            `json:"cluster_error,omitempty"`
	Faults       []string          `json:"faults"`
	MemoryRSS    int64             `json:"memory_rss_bytes"`
	Processes    int               `json:"processes"`
}

// Status reads units, pids, ports, installed versions and cluster health.
func (l *Lab) Status(ctx context.Context) (*Status, error) {
	sd := l.systemd()
	st := &Status{Dir: l.st.Dir, ID: l.st.ID, Host: l.st.Host, Address: l.st.Address, Profile: l.prof.Name, SystemdPID: l.st.SystemdPID, SystemdAlive: sd.pidInLab(l.st.SystemdPID),
		Versions: map[string]string{}, Faults: append([]string{}, l.st.Faults...), Units: []UnitState{}}
	if st.SystemdAlive {
		err := l.withUnits(ctx, func(c unitConn) error {
			for _, u := range l.st.Units {
				us, err := UnitStatus(ctx, c, u)
				if err != nil {
					return err
				}
				st.Units = append(st.Units, us)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	p := l.st.Ports
	var ports []PortStatus
	if l.runs("indexer") {
		ports = append(ports, PortStatus{"indexer", "tcp", p.Indexer, false})
	}
	if l.runs("manager") {
		ports = append(ports, PortStatus{"manager-api", "tcp", p.API, false}, PortStatus{"agents", "tcp", p.Agent, false},
			PortStatus{"enrollment", "tcp", p.Enrollment, false})
		if l.st.Syslog {
			ports = append(ports, PortStatus{"syslog", "udp", p.Syslog, false})
		}
	}
	if l.runs("dashboard") {
		ports = append(ports, PortStatus{"dashboard", "tcp", p.Dashboard, false})
	}
	tcp, udp := listeningPorts("/proc/net/tcp", "0A"), listeningPorts("/proc/net/udp", "07")
	for k, v := range listeningPorts("/proc/net/tcp6", "0A") {
		tcp[k] = v
	}
	for k, v := range listeningPorts("/proc/net/udp6", "07") {
		udp[k] = v
	}
	for i := range ports {
		if ports[i].Proto == "tcp" {
			ports[i].Listening = tcp[ports[i].Port]
		} else {
			ports[i].Listening = udp[ports[i].Port]
		}
	}
	st.Ports = ports
	a := l.apt()
	for i, pkg := range l.prof.Packages() {
		if l.runs(packageComponents[i]) || len(l.st.Components) == 0 {
			st.Packages = append(st.Packages, pkg)
		}
	}
	for _, pkg := range st.Packages {
		v, err := a.InstalledVersion(ctx, pkg)
		if err != nil {
			return nil, err
		}
		if v != "" {
			st.Versions[pkg] = v
		}
	}
	if c, err := l.indexer(); err == nil {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		h, err := c.health(hctx, "")
		cancel()
		if err != nil {
			st.ClusterError = err.Error()
		} else {
			st.Cluster = &h
		}
	} else {
		st.ClusterError = err.Error()
	}
	st.Processes = len(sd.Procs())
	st.MemoryRSS = l.MemoryRSS()
	return st, nil
}

// listeningPorts parses /proc/net/{tcp,udp}[6] for local ports in state (0A listen, 07 udp bound).
func listeningPorts(file, state string) map[int]bool {
	out := map[int]bool{}
	f, err := os.Open(file)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != state {
			continue
		}
		_, port, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(port, 16, 32); err == nil {
			out[int(n)] = true
		}
	}
	return out
}

// String renders the status as text.
func (s *Status) String() string {
	var b strings.Builder
	if s.Host != "" {
		fmt.Fprintf(&b, "host %s %s (%s, cgroup lab-%s)\n", s.Host, s.Address, s.Dir, s.ID)
	} else {
		fmt.Fprintf(&b, "lab %s (profile %s, cgroup lab-%s)\n", s.Dir, s.Profile, s.ID)
	}
	fmt.Fprintf(&b, "systemd  pid %d  alive=%v  processes=%d  memory=%d MiB\n", s.SystemdPID, s.SystemdAlive, s.Processes, s.MemoryRSS>>20)
	for _, u := range s.Units {
		fmt.Fprintf(&b, "unit     %-24s %s/%s pid %d\n", u.Name, u.ActiveState, u.SubState, u.MainPID)
	}
	for _, p := range s.Ports {
		fmt.Fprintf(&b, "port     %-12s %s/%d listening=%v\n", p.Name, p.Proto, p.Port, p.Listening)
	}
	for _, pkg := range s.Packages {
		if v, ok := s.Versions[pkg]; ok {
			fmt.Fprintf(&b, "package  %-16s %s\n", pkg, v)
		}
	}
	if s.Cluster != nil {
		fmt.Fprintf(&b, "cluster  %s (nodes %d, active shards %d, unassigned %d)\n", s.Cluster.Status, s.Cluster.NumberOfNodes, s.Cluster.ActiveShards, s.Cluster.UnassignedShards)
	} else {
		fmt.Fprintf(&b, "cluster  unreachable: %s\n", s.ClusterError)
	}
	if len(s.Faults) > 0 {
		fmt.Fprintf(&b, "faults   %s\n", strings.Join(s.Faults, ", "))
	}
	return b.String()
}
