package manager

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// agentTimeFormat is how the API prints agent dates.
const agentTimeFormat = "2006-01-02T15:04:05Z"

// neverKeepAlive is agent 000's last_keepalive (253402300799 → 9999-12-31T23:59:59Z).
const neverKeepAlive int64 = 253402300799

// viewCtx computes what the API and the tools show for an agent at a given moment: stored state plus
// the manager's identity and the active faults.
type viewCtx struct {
	now            time.Time
	hostname       string
	nodeName       string
	managerVersion string // "v4.9.0"
	disconnected   bool
	discSince      time.Time
	newerID        int // agent id that reports a newer version (agent-newer fault), 0 = none
	// notBack are the agents that did not reconnect after the start at
	// startedAt (agents-no-reconnect fault).
	notBack   map[int]bool
	startedAt time.Time
}

// notReconnecting picks the agents the agents-no-reconnect fault keeps
// away: every tenth active agent (at least one).
func notReconnecting(agents []*Agent) map[int]bool {
	var active []*Agent
	for _, a := range agents {
		if a.ID > 0 && a.Conn == StatusActive {
			active = append(active, a)
		}
	}
	out := map[int]bool{}
	for i := 0; i < len(active); i += 10 {
		out[active[i].ID] = true
	}
	return out
}

// agentNode is the node the agent reports to: a worker's (its synced node_name), else this node.
func (c *viewCtx) agentNode(a *Agent) string {
	if a.Node != "" {
		return a.Node
	}
	return c.nodeName
}

func (c *viewCtx) status(a *Agent) string {
	if a.ID == 0 {
		return StatusActive
	}
	if a.Node != "" {
		return a.Conn // a worker's agent: as the worker synced it
	}
	if a.Conn == StatusActive && (c.disconnected || c.notBack[a.ID]) {
		return StatusDisconnected
	}
	return a.Conn
}

// lastKeepAlive returns the unix time of the last keepalive, or 0 when the agent never connected.
func (c *viewCtx) lastKeepAlive(a *Agent) int64 {
	switch {
	case a.ID == 0:
		return neverKeepAlive
	case a.Node != "":
		return a.LastKeepAlive
	case a.Conn == StatusActive && c.disconnected:
		return c.discSince.Add(-time.Duration(5+a.ID%50) * time.Second).Unix()
	case a.Conn == StatusActive && c.notBack[a.ID]:
		return c.startedAt.Add(-time.Duration(5+a.ID%50) * time.Second).Unix()
	case a.Conn == StatusActive:
		// The last periodic keepalive, or the (re)connection when that is later (an agent back from
		// an upgrade records it).
		k := c.now.Add(-time.Duration(a.ID*7%55) * time.Second).Unix()
		if a.LastKeepAlive > k && a.LastKeepAlive <= c.now.Unix() {
			return a.LastKeepAlive
		}
		return k
	case a.Conn == StatusNeverConnected:
		return 0
	}
	return a.LastKeepAlive
}

func (c *viewCtx) version(a *Agent) string {
	if a.ID == 0 {
		return "Wazuh " + c.managerVersion
	}
	if a.ID == c.newerID && c.newerID != 0 {
		ma, mi, _, ok := parseSemver(strings.TrimPrefix(c.managerVersion, "v"))
		if ok {
			return fmt.Sprintf("Wazuh v%d.%d.0", ma, mi+1)
		}
	}
	return a.Version
}

func (c *viewCtx) name(a *Agent) string {
	if a.ID == 0 {
		return c.hostname
	}
	return a.Name
}

func (c *viewCtx) ip(a *Agent) string {
	if a.ID == 0 {
		return "127.0.0.1"
	}
	if a.IP != "" {
		return a.IP
	}
	return a.RegisterIP
}

func (c *viewCtx) os(a *Agent) *OS {
	if a.ID == 0 && a.OS == nil { // the manager host's own OS unless recorded
		// The real integration environment's manager (Tavern's expectations): Ubuntu 20.04, with a
		// minor version, a name the alphanumeric filter format takes, and uname's machine as arch.
		return &OS{Arch: "x86_64", Name: "Ubuntu", Platform: "ubuntu", Major: "20", Minor: "04", Version: "20.04.6 LTS",
			Codename: "Focal Fossa", Uname: "Linux |" + c.hostname + " |5.15.0-105-generic |#115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024 |x86_64"}
	}
	return a.OS
}

// checkTime is the time older_than compares against: dateAdd for never-connected agents.
func (c *viewCtx) checkTime(a *Agent) int64 {
	if c.status(a) == StatusNeverConnected {
		return a.DateAdd
	}
	return c.lastKeepAlive(a)
}

func fmtUnix(t int64) string { return time.Unix(t, 0).UTC().Format(agentTimeFormat) }

// agentFields are the selectable fields in output order.
var agentFields = []string{"os", "id", "name", "ip", "registerIP", "status", "status_code", "version", "manager",
	"node_name", "dateAdd", "lastKeepAlive", "group", "configSum", "mergedSum", "group_config_status", "disconnection_time"}

var osFields = []string{"arch", "codename", "major", "minor", "name", "platform", "uname", "version"}

func osField(o *OS, f string) string {
	if o == nil {
		return ""
	}
	switch f {
	case "arch":
		return o.Arch
	case "codename":
		return o.Codename
	case "major":
		return o.Major
	case "minor":
		return o.Minor
	case "name":
		return o.Name
	case "platform":
		return o.Platform
	case "uname":
		return o.Uname
	case "version":
		return o.Version
	}
	return ""
}

// validField reports whether name is a known (possibly dotted) agent field.
func validField(name string) bool {
	if rest, ok := strings.CutPrefix(name, "os."); ok {
		for _, f := range osFields {
			if f == rest {
				return true
			}
		}
		return false
	}
	for _, f := range agentFields {
		if f == name {
			return true
		}
	}
	return false
}

// field returns the string value of a field used by sort, q and search ("" when absent).
func (c *viewCtx) field(a *Agent, name string) string {
	if rest, ok := strings.CutPrefix(name, "os."); ok {
		return osField(c.os(a), rest)
	}
	switch name {
	case "id":
		return a.IDString()
	case "name":
		return c.name(a)
	case "ip":
		return c.ip(a)
	case "registerIP":
		return a.RegisterIP
	case "status":
		return c.status(a)
	case "status_code":
		return "0"
	case "version":
		return c.version(a)
	case "manager":
		if c.status(a) == StatusNeverConnected {
			return ""
		}
		if a.Manager != "" {
			return a.Manager // a worker's agent: the worker's hostname (global.db's manager_host)
		}
		return c.hostname
	case "node_name":
		if c.status(a) == StatusNeverConnected {
			return "unknown" // global.db's default until the agent connects to a node
		}
		return c.agentNode(a)
	case "dateAdd":
		return fmtUnix(a.DateAdd)
	case "lastKeepAlive":
		if t := c.lastKeepAlive(a); t != 0 {
			return fmtUnix(t)
		}
	case "group":
		return strings.Join(a.Group, ",")
	case "configSum":
		return a.ConfigSum
	case "mergedSum":
		return a.MergedSum
	case "group_config_status":
		if a.Synced || a.ID == 0 {
			return "synced"
		}
		return "not synced"
	case "disconnection_time":
		if c.status(a) == StatusDisconnected {
			return fmtUnix(c.lastKeepAlive(a) + 600)
		}
	}
	return ""
}

// appendAgentJSON renders the agent as a JSON object with the selected fields (nil = all). "id" is
// always included, like the real API (min_select_fields).
func (c *viewCtx) appendAgentJSON(b []byte, a *Agent, sel map[string]bool) []byte {
	b = append(b, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
	}
	want := func(f string) bool { return sel == nil || sel[f] || f == "id" }
	for _, f := range agentFields {
		switch f {
		case "os":
			o := c.os(a)
			if o == nil {
				continue
			}
			wantOS := sel == nil || sel["os"]
			var subs []string
			for _, sf := range osFields {
				if (wantOS || sel["os."+sf]) && osField(o, sf) != "" {
					subs = append(subs, sf)
				}
			}
			if len(subs) == 0 {
				continue
			}
			key("os")
			b = append(b, '{')
			for i, sf := range subs {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendQuote(b, sf)
				b = append(b, ':')
				b = appendJSONString(b, osField(o, sf))
			}
			b = append(b, '}')
		case "status_code":
			if want(f) {
				key(f)
				b = append(b, '0')
			}
		case "group":
			if want(f) && len(a.Group) > 0 && a.ID != 0 {
				key(f)
				b = append(b, '[')
				for i, g := range a.Group {
					if i > 0 {
						b = append(b, ',')
					}
					b = appendJSONString(b, g)
				}
				b = append(b, ']')
			}
		default:
			if !want(f) {
				continue
			}
			v := c.field(a, f)
			if v == "" {
				continue
			}
			key(f)
			b = appendJSONString(b, v)
		}
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"' || ch == '\\':
			b = append(b, '\\', ch)
		case ch < 0x20:
			b = fmt.Appendf(b, `\u%04x`, ch)
		default:
			b = append(b, ch)
		}
	}
	return append(b, '"')
}
