package diagnose

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/ops/hostfacts"
)

// ---- port already bound ------------------------------------------------------

var bindPort = regexp.MustCompile(`(?i)(?:failed to bind to|bind) \[?[\w.:\-\]\[]*?:\[?(\d{2,5})\]?`)

func detectPortBound(ctx context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Address already in use", "address already in use", "EADDRINUSE")
	if i < 0 {
		// a component slow to reach its bind (a loaded host) has not said so yet:
		// the port's owner says it already
		return ev.portHeldNow(ctx)
	}
	port := 0
	// the port is named on the line or the ones just before it
	for j := i; j >= 0 && j >= i-30 && port == 0; j-- {
		if m := bindPort.FindStringSubmatch(ev.Lines[j]); m != nil {
			port, _ = strconv.Atoi(m[1])
		}
	}
	var ports []int
	if port != 0 {
		ports = []int{port}
	} else {
		ports = ev.componentPorts()
	}
	f := Finding{Evidence: []string{line}, at: i}
	for _, p := range ports {
		h, err := ev.holders(ctx, p)
		switch {
		case err != nil:
			f.Evidence = append(f.Evidence, fmt.Sprintf("port %d: cannot read who holds it: %v", p, err))
		case len(h.Processes) == 0 && !h.Unreadable:
			if port == 0 {
				continue
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("port %d: nothing listens on it now (the holder has gone)", p))
		default:
			f.Cause = fmt.Sprintf("port %d already bound by %s", p, h.Describe())
			f.Fix = fmt.Sprintf("stop %s or move it off port %d (%s needs it%s), then %s",
				h.Describe(), p, ev.Component, ev.portSetting(p), start(ev.Component))
			f.Evidence = append(f.Evidence, fmt.Sprintf("tcp port %d held by %s", p, h.Describe()))
			return f, true
		}
	}
	if port != 0 {
		f.Cause = fmt.Sprintf("port %d was already bound when %s started", port, ev.Component)
	} else {
		f.Cause = fmt.Sprintf("a port %s needs was already bound when it started", ev.Component)
	}
	f.Fix = fmt.Sprintf("find the process on the port (ss -ltnp) and stop it or move it, then %s", start(ev.Component))
	return f, true
}

// portHeldNow finds a port of the component held by a process that is not
// its unit's (hostfacts' port-owner verdict, as the health check ports
// judges it): the cause of a start before the component logs it, or while
// it is still starting.
func (ev *Evidence) portHeldNow(ctx context.Context) (Finding, bool) {
	if ev.Processes == nil {
		return Finding{}, false
	}
	ports := ev.componentPorts()
	if len(ports) == 0 {
		return Finding{}, false
	}
	l, err := hostfacts.ReadListening(ctx, ev.Host.ProcRoot)
	if err != nil {
		return Finding{}, false
	}
	v := hostfacts.PortsVerdict{}
	for _, p := range ports {
		v.Ports = append(v.Ports, hostfacts.PortState{ExpectedPort: hostfacts.ExpectedPort{Port: p, Owner: ev.Component}, Listening: l.TCP(p)})
	}
	var own []int
	err = v.Owners(ctx, func(ctx context.Context, ports []int) (map[int]hostfacts.Holder, error) {
		return l.Holders(ctx, ev.Host.ProcRoot, "tcp", ports...)
	}, func(ctx context.Context, _ string) ([]int, bool) {
		ps, err := ev.Processes(ctx)
		own = ps
		return ps, err == nil
	})
	if err != nil {
		return Finding{}, false
	}
	foreign := v.Foreign()
	if len(foreign) == 0 {
		return Finding{}, false
	}
	p := foreign[0]
	h := p.Holder.Describe()
	return Finding{Kind: KindPortBound, at: len(ev.Lines),
		Cause:    fmt.Sprintf("port %d already bound by %s", p.Port, h),
		Evidence: []string{fmt.Sprintf("tcp port %d held by %s, not by %s's unit %s (its processes: %s)", p.Port, h, ev.Component, ev.Unit.Name, pidList(own))},
		Fix:      fmt.Sprintf("stop %s or move it off port %d (%s needs it%s), then %s", h, p.Port, ev.Component, ev.portSetting(p.Port), start(ev.Component)),
	}, true
}

func pidList(pids []int) string {
	if len(pids) == 0 {
		return "none"
	}
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

// componentPorts are the TCP ports the component binds, from siemctl's
// configuration and opensearch.yml.
func (ev *Evidence) componentPorts() []int {
	c := ev.Config
	if c == nil {
		return nil
	}
	var out []int
	add := func(raw string) {
		if u, err := url.Parse(raw); err == nil {
			if p, err := strconv.Atoi(u.Port()); err == nil {
				out = append(out, p)
			}
		}
	}
	switch ev.Component {
	case "indexer":
		add(c.Indexer.URL)
		if p, err := strconv.Atoi(ev.indexerYAML()["transport.port"]); err == nil {
			out = append(out, p)
		}
	case "manager":
		add(c.Manager.APIURL)
		out = append(out, c.Manager.AgentPort, c.Manager.EnrollmentPort)
	case "dashboard":
		add(c.Dashboard.URL)
	}
	return slices.DeleteFunc(out, func(p int) bool { return p <= 0 })
}

// portSetting names the setting that gives the component the port.
func (ev *Evidence) portSetting(p int) string {
	if ev.Component != "indexer" {
		return ""
	}
	y := ev.indexerYAML()
	for _, k := range []string{"http.port", "transport.port"} {
		if y[k] == strconv.Itoa(p) {
			return fmt.Sprintf(": %s in %s", k, ev.indexerYAMLFile())
		}
	}
	return ""
}
