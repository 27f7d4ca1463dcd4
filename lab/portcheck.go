package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrPortBusy: a port the lab would bind is already taken.
var ErrPortBusy = errors.New("port already in use")

// boundPorts are the ports the lab will bind, by protocol, with what binds
// them.
func (l *Lab) boundPorts() []struct {
	proto, what string
	port        int
} {
	p := l.st.Ports
	type bp = struct {
		proto, what string
		port        int
	}
	out := []bp{{"tcp", "indexer HTTP", p.Indexer}, {"tcp", "indexer transport", p.Transport}}
	if l.st.Emulators {
		out = append(out, bp{"tcp", "manager API", p.API}, bp{"tcp", "manager agents", p.Agent}, bp{"tcp", "manager enrollment", p.Enrollment},
			bp{"tcp", "dashboard", p.Dashboard})
		if l.st.Syslog {
			out = append(out, bp{"udp", "manager syslog", p.Syslog})
		}
	}
	return out
}

// checkPortsFree refuses, before anything starts, a port the lab would
// bind that another process holds, naming the port and the process.
func (l *Lab) checkPortsFree(ctx context.Context) error {
	var busy []string
	for _, b := range l.boundPorts() {
		if err := ctx.Err(); err != nil {
			return err
		}
		inodes, ok := boundInodes("/proc", b.proto, b.port)
		if !ok {
			return nil // no /proc/net: the components' own bind errors will say it
		}
		if len(inodes) == 0 {
			continue
		}
		who := "a process the lab cannot see"
		if hs := socketHolders("/proc", inodes); len(hs) > 0 {
			who = strings.Join(hs, ", ")
		}
		busy = append(busy, fmt.Sprintf("%s port %d (%s) is held by %s", b.proto, b.port, b.what, who))
	}
	if len(busy) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: stop it or choose another --port-offset", ErrPortBusy, strings.Join(busy, "; "))
}
