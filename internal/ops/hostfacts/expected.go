package hostfacts

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/ops/verdict"
)

// ExpectedPort is a port that must listen on this host and what owns it.
type ExpectedPort struct {
	Port  int    `json:"port"`
	Owner string `json:"owner"` // "indexer", "manager API", "manager agents", …
}

// String is "1514 (manager agents)".
func (p ExpectedPort) String() string { return fmt.Sprintf("%d (%s)", p.Port, p.Owner) }

// Component is the stack component owning the port (the owner's first word).
func (p ExpectedPort) Component() string { return strings.Fields(p.Owner)[0] }

// PortsVerdict says which of the stack's ports are not listening, in the
// one verdict shape (internal/ops/verdict): Wait with the missing ports as
// Items ("9200 (indexer)"), or OK with the ports listening. Health maps a
// missing port to CRIT with its own fix (the unit's diagnosis) and judges
// the holders (JudgeOwners, Foreign); the upgrade gate maps Wait to pending.
type PortsVerdict struct {
	verdict.Verdict `json:"-"`
	Ports           []PortState `json:"ports"` // in port order
	// Remote are endpoints on another host, not checked here.
	Remote []string `json:"remote,omitempty"`
}

// PortState is one expected port and whether it listens.
type PortState struct {
	ExpectedPort
	Listening bool `json:"listening"`
	// Holder is who listens (JudgeOwners); Foreign: not the component's
	// unit.
	Holder  *Holder `json:"holder,omitempty"`
	Foreign bool    `json:"foreign,omitempty"`
}

// Expected returns the ports that must listen on this host, sorted: the
// port of each URL (owner → URL; the scheme's default when none) whose
// host is this one, and each fixed port (owner → port) that is set. URLs
// on another host are returned as remote notes.
func Expected(urls map[string]string, fixed map[string]int) (want []ExpectedPort, remote []string) {
	for owner, port := range fixed {
		if port > 0 {
			want = append(want, ExpectedPort{Port: port, Owner: owner})
		}
	}
	for owner, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			continue
		}
		if !isLocalHost(u.Hostname()) {
			remote = append(remote, fmt.Sprintf("%s at %s is not on this host: not checked", owner, u.Host))
			continue
		}
		p, err := strconv.Atoi(u.Port())
		if err != nil {
			p = map[string]int{"https": 443, "http": 80}[u.Scheme]
		}
		if p > 0 {
			want = append(want, ExpectedPort{Port: p, Owner: owner})
		}
	}
	slices.SortFunc(want, func(a, b ExpectedPort) int { return cmp.Or(a.Port-b.Port, strings.Compare(a.Owner, b.Owner)) })
	want = slices.CompactFunc(want, func(a, b ExpectedPort) bool { return a.Port == b.Port })
	slices.Sort(remote)
	return want, remote
}

// JudgePorts says which of want are listening: Summary "listening: 9200,
// 55000" or "not listening: 1514 (manager agents), …", Fix a restart of
// the components whose ports are missing.
func JudgePorts(want []ExpectedPort, remote []string, listening map[int]bool) PortsVerdict {
	v := PortsVerdict{Ports: make([]PortState, len(want)), Remote: remote}
	var ports, restart []string
	for i, p := range want {
		v.Ports[i] = PortState{ExpectedPort: p, Listening: listening[p.Port]}
		ports = append(ports, strconv.Itoa(p.Port))
		if !listening[p.Port] {
			v.Items = append(v.Items, p.String())
			if !slices.Contains(restart, p.Component()) {
				restart = append(restart, p.Component())
			}
		}
	}
	v.Summary = "listening: " + strings.Join(ports, ", ")
	if len(v.Items) > 0 {
		v.Level, v.Summary, v.Fix = verdict.Wait, "not listening: "+strings.Join(v.Items, ", "), "siemctl services restart "+strings.Join(restart, " ")
	}
	return v
}

func isLocalHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// ExpectedOf are the ports that must listen on this host for the components the configuration says
// it runs (the indexer, manager API, agent and enrollment ports, the dashboard), and what is not
// judged here (a URL of another host): the one list of the health check and the upgrade's port gate.
func ExpectedOf(c *config.Config) (want []ExpectedPort, remote []string) {
	urls, fixed := map[string]string{}, map[string]int{}
	if c.Runs("indexer") {
		urls["indexer"] = c.Indexer.URL
	}
	if c.Runs("manager") {
		urls["manager API"] = c.Manager.APIURL
		fixed["manager agents"], fixed["manager enrollment"] = c.Manager.AgentPort, c.Manager.EnrollmentPort
	}
	if c.Runs("dashboard") {
		urls["dashboard"] = c.Dashboard.URL
	}
	return Expected(urls, fixed)
}
