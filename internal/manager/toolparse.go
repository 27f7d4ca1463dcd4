package manager

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"time"
)

// The pure parsers of the manager tools' output. They never fail on odd
// input: unknown lines are ignored, and the callers decide what an empty
// result means.

// ControlInfo is `<control> info`.
type ControlInfo struct {
	Product  string `json:"product"`  // the key prefix: "WAZUH", "SIEM"
	Version  string `json:"version"`  // "v4.9.0"
	Revision string `json:"revision"` // "40907"
	Type     string `json:"type"`     // "server"
}

// ParsedVersion parses Version.
func (i ControlInfo) ParsedVersion() (Version, error) { return ParseVersion(i.Version) }

// ParseControlInfo reads the shell-style lines of `info`
// (WAZUH_VERSION="v4.9.0", WAZUH_REVISION="40907", WAZUH_TYPE="server"),
// accepting any <PREFIX>_ key. ok is false when no *_VERSION line is found.
func ParseControlInfo(out []byte) (info ControlInfo, ok bool) {
	for _, line := range lines(out) {
		key, val, found := strings.Cut(line, "=")
		if !found {
			continue
		}
		key = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(key), "export "))
		if key == "" || strings.ContainsAny(key, " \t") {
			continue
		}
		val = unquote(strings.TrimSpace(val))
		prefix, field, found := cutLast(key, "_")
		if !found || prefix == "" {
			continue
		}
		switch field {
		case "VERSION":
			info.Version, info.Product, ok = val, prefix, true
		case "REVISION":
			info.Revision = val
		case "TYPE":
			info.Type = val
		}
	}
	return info, ok
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// DaemonStatus is one line of `<control> status`.
type DaemonStatus struct {
	Name     string `json:"name"`
	Running  bool   `json:"running"`
	StalePID int    `json:"stale_pid,omitempty"` // "Process N not used by …, removing"
}

// ControlStatus is the parsed `status` output, in its order.
type ControlStatus struct {
	Daemons []DaemonStatus `json:"daemons"`
}

// States returns the daemons as running/stopped, for NotReady.
func (s ControlStatus) States() DaemonStates {
	out := DaemonStates{}
	for _, d := range s.Daemons {
		if d.Running {
			out[d.Name] = DaemonRunning
		} else {
			out[d.Name] = DaemonStopped
		}
	}
	return out
}

// ParseControlStatus reads `<daemon> is running...` / `<daemon> not
// running...` lines and the stale-pidfile line `<daemon>: Process <pid> not
// used by Wazuh, removing...`. The exit code of `status` is not a health
// signal (optional daemons are normally stopped), so only lines count.
func ParseControlStatus(out []byte) ControlStatus {
	var st ControlStatus
	index := map[string]int{}
	for _, line := range lines(out) {
		if name, rest, ok := strings.Cut(line, ": Process "); ok && name != "" && !strings.Contains(name, " ") {
			pidText, _, _ := strings.Cut(rest, " ")
			pid, err := strconv.Atoi(pidText)
			if err == nil && strings.Contains(rest, "not used by") {
				i := st.upsert(index, name)
				st.Daemons[i].StalePID = pid
			}
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if !ok || name == "" {
			continue
		}
		rest = strings.TrimSpace(rest)
		switch {
		case strings.HasPrefix(rest, "is running"):
			i := st.upsert(index, name)
			st.Daemons[i].Running = true
		case strings.HasPrefix(rest, "not running"):
			i := st.upsert(index, name)
			st.Daemons[i].Running = false
		}
	}
	return st
}

func (s *ControlStatus) upsert(index map[string]int, name string) int {
	if i, ok := index[name]; ok {
		return i
	}
	s.Daemons = append(s.Daemons, DaemonStatus{Name: name})
	index[name] = len(s.Daemons) - 1
	return index[name]
}

// LogLine is one `YYYY/MM/DD HH:MM:SS <tag>: <LEVEL>: <msg>` line.
type LogLine struct {
	Time    time.Time `json:"time"` // as printed, local time read as UTC
	Tag     string    `json:"tag"`
	Level   string    `json:"level"` // ERROR, CRITICAL, WARNING, INFO, DEBUG
	Message string    `json:"message"`
}

func (l LogLine) String() string {
	if l.Tag == "" {
		return l.Level + ": " + l.Message
	}
	return l.Tag + ": " + l.Level + ": " + l.Message
}

// ParseLogLine reads one log line; ok is false for other text.
func ParseLogLine(line string) (LogLine, bool) {
	line = strings.TrimSpace(line)
	if len(line) < 20 || line[4] != '/' || line[7] != '/' || line[10] != ' ' || line[13] != ':' {
		return LogLine{}, false
	}
	ts, err := time.Parse("2006/01/02 15:04:05", line[:19])
	if err != nil {
		return LogLine{}, false
	}
	rest := strings.TrimSpace(line[19:])
	tag, rest, ok := strings.Cut(rest, ": ")
	if !ok || tag == "" {
		return LogLine{}, false
	}
	level, msg, ok := strings.Cut(rest, ": ")
	if !ok || !isLevel(level) {
		return LogLine{}, false
	}
	return LogLine{Time: ts, Tag: tag, Level: level, Message: strings.TrimSpace(msg)}, true
}

func isLevel(s string) bool {
	switch s {
	case "ERROR", "CRITICAL", "WARNING", "INFO", "DEBUG":
		return true
	}
	return false
}

// ParseCheck returns the ERROR and CRITICAL lines of a config check (and of
// a failed start: `<daemon>: Configuration error. Exiting`), in order.
func ParseCheck(out []byte) []LogLine {
	var res []LogLine
	for _, line := range lines(out) {
		if l, ok := ParseLogLine(line); ok {
			if l.Level == "ERROR" || l.Level == "CRITICAL" {
				res = append(res, l)
			}
			continue
		}
		if tag, msg, ok := strings.Cut(line, ": "); ok && !strings.Contains(tag, " ") &&
			strings.Contains(msg, "Configuration error") {
			res = append(res, LogLine{Tag: tag, Level: "ERROR", Message: msg})
		}
	}
	return res
}

// ToolAgent is one agent line of `agent_control -l` (or `manage_agents -l`).
type ToolAgent struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	IP     string `json:"ip"`     // the registration IP from client.keys, often "any"
	Status string `json:"status"` // API vocabulary: active, disconnected, never_connected, pending
	Local  bool   `json:"local"`  // "Active/Local": agent 000, the manager
}

// toolStatus maps agent_control's status words to the API's.
func toolStatus(s string) (status string, local bool) {
	s = strings.TrimSpace(s)
	if base, ok := strings.CutSuffix(s, "/Local"); ok {
		s, local = base, true
	}
	switch strings.ToLower(s) {
	case "active":
		return AgentActive, local
	case "disconnected":
		return AgentDisconnected, local
	case "never connected":
		return AgentNeverConnected, local
	case "pending":
		return AgentPending, local
	}
	return strings.ReplaceAll(strings.ToLower(s), " ", "_"), local
}

// ParseAgentList reads lines `   ID: 001, Name: web-01, IP: any, Active`.
// Names may contain commas: the IP is found from the right, the name is
// everything between "Name: " and the last ", IP: ". Lines with "** " are
// returned as tool errors.
func ParseAgentList(out []byte) (agents []ToolAgent, toolErrors []string) {
	agents = []ToolAgent{}
	for _, line := range lines(out) {
		if strings.HasPrefix(line, "** ") {
			toolErrors = append(toolErrors, line)
			continue
		}
		rest, ok := strings.CutPrefix(line, "ID: ")
		if !ok {
			continue
		}
		id, rest, ok := strings.Cut(rest, ", Name: ")
		if !ok || ValidateAgentID(id) != nil {
			continue
		}
		ipAt := strings.LastIndex(rest, ", IP: ")
		if ipAt < 0 {
			continue
		}
		a := ToolAgent{ID: id, Name: rest[:ipAt]}
		tail := rest[ipAt+len(", IP: "):]
		if ip, status, ok := strings.Cut(tail, ", "); ok {
			a.IP = strings.TrimSpace(ip)
			a.Status, a.Local = toolStatus(status)
		} else {
			a.IP = strings.TrimSpace(tail)
		}
		if a.ID == ManagerAgentID {
			a.Name = strings.TrimSuffix(a.Name, " (server)")
		}
		agents = append(agents, a)
	}
	return agents, toolErrors
}

// ToolAgentInfo is `agent_control -i ID`.
type ToolAgentInfo struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	IP              string    `json:"ip"`
	Status          string    `json:"status"`
	Local           bool      `json:"local"`
	OS              string    `json:"os"`
	Version         string    `json:"version"` // "Wazuh v4.9.0"
	ConfigHash      string    `json:"config_hash"`
	SharedHash      string    `json:"shared_hash"`
	LastKeepAlive   time.Time `json:"last_keep_alive"`
	SyscheckStarted string    `json:"syscheck_started,omitempty"`
	SyscheckEnded   string    `json:"syscheck_ended,omitempty"`
}

// ParseAgentInfo reads the `Key: value` block of `agent_control -i`. ok is
// false when no "Agent ID" line is present; toolErrors holds "** " lines
// (e.g. "** Invalid agent id '099'.").
func ParseAgentInfo(out []byte) (info ToolAgentInfo, ok bool, toolErrors []string) {
	for _, line := range lines(out) {
		if strings.HasPrefix(line, "** ") {
			toolErrors = append(toolErrors, line)
			continue
		}
		key, val, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		val = strings.TrimSpace(val)
		if val == nullField {
			val = "" // a never-connected agent's unset columns, printed by glibc as "(null)"
		}
		switch strings.TrimSpace(key) {
		case "Agent ID":
			id, _, _ := strings.Cut(val, " ")
			if ValidateAgentID(id) == nil {
				info.ID, ok = id, true
				info.Local = strings.Contains(val, "local instance")
			}
		case "Agent Name":
			info.Name = val
		case "IP address":
			info.IP = val
		case "Status":
			var local bool
			info.Status, local = toolStatus(val)
			info.Local = info.Local || local
		case "Operating system":
			info.OS = val
		case "Client version":
			info.Version = val
		case "Configuration hash":
			info.ConfigHash = val
		case "Shared file hash":
			info.SharedHash = val
		case "Last keep alive":
			if n, err := strconv.ParseInt(val, 10, 64); err == nil && n > 0 && n < 1<<40 {
				info.LastKeepAlive = time.Unix(n, 0).UTC()
			}
		case "Syscheck last started at":
			info.SyscheckStarted = val
		case "Syscheck last ended at":
			info.SyscheckEnded = val
		}
	}
	return info, ok, toolErrors
}

// nullField is how the tools print an unset (NULL) column.
const nullField = "(null)"

// toolErrorLines returns the "** " lines of a tool's output.
func toolErrorLines(out []byte) []string {
	var res []string
	for _, line := range lines(out) {
		if strings.HasPrefix(line, "** ") {
			res = append(res, line)
		}
	}
	return res
}

// lines splits output into trimmed, non-empty lines (CRLF tolerant; very
// long lines are cut, not fatal).
func lines(out []byte) []string {
	var res []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	sc.Split(scanLinesLenient)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			res = append(res, l)
		}
	}
	return res
}

// scanLinesLenient is bufio.ScanLines that cuts over-long lines instead of
// failing.
func scanLinesLenient(data []byte, atEOF bool) (int, []byte, error) {
	const max = 64 << 10
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		if i > max {
			return i + 1, data[:max], nil
		}
		return i + 1, bytes.TrimRight(data[:i], "\r"), nil
	}
	if len(data) > max {
		return len(data), data[:max], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), bytes.TrimRight(data, "\r"), nil
	}
	return 0, nil, nil
}
