package manager

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// confRelPath is how the daemons name the config file in their messages (OSSECCONF in defs.h).
const confRelPath = "etc/ossec.conf"

// Remote is one <remote> block.
type Remote struct {
	Connection string // secure | syslog
	Port       int
	Protocol   string // tcp | udp
	LocalIP    string
	AllowedIPs []string
}

// Config is the subset of ossec.conf the emulator uses.
type Config struct {
	JSONOut                 bool
	AlertsLog               bool
	LogAlertLevel           int
	EmailAlertLevel         int
	AgentsDisconnectionTime time.Duration
	Remotes                 []Remote
	AuthDisabled            bool
	AuthPort                int
	ClusterDisabled         bool
	ClusterName             string
	NodeName                string
	// <agent-upgrade><max_threads> (default 8, 0: one per core).
	UpgradeMaxThreads int
	// Emulator-only <emulator> section.
	BackgroundAlertsInterval time.Duration // 0 disables
	// The upgrade module's timing (upgrade_send_time, upgrade_restart_time, upgrade_task_timeout;
	// 0: the defaults 4 s, 6 s, 900 s).
	UpgradeSendTime, UpgradeRestartTime, UpgradeTaskTimeout time.Duration
}

// ConfigError carries the daemon log lines (without timestamps) that a config error produces.
type ConfigError struct {
	Lines []string // e.g. "wazuh-analysisd: ERROR: (1230): Invalid element in the configuration: 'x'."
}

func (e *ConfigError) Error() string { return strings.Join(e.Lines, "\n") }

// Messages returns the lines stripped of the "<daemon>: <LEVEL>: " prefix, as the API's validation does.
func (e *ConfigError) Messages() []string {
	out := make([]string, 0, len(e.Lines))
	for _, l := range e.Lines {
		for _, lvl := range []string{"ERROR: ", "CRITICAL: "} {
			if i := strings.Index(l, lvl); i >= 0 {
				l = l[i+len(lvl):]
				break
			}
		}
		out = append(out, l)
	}
	return out
}

const confDaemon = "wazuh-analysisd"

func confErr(lines ...string) *ConfigError {
	out := make([]string, 0, len(lines)+1)
	for _, l := range lines {
		out = append(out, confDaemon+": ERROR: "+l)
	}
	out = append(out, confDaemon+": CRITICAL: (1202): Configuration error at '"+confRelPath+"'.")
	return &ConfigError{Lines: out}
}

type xnode struct {
	name     string
	line     int
	text     string
	attrs    map[string]string
	children []*xnode
}

// parseXML reads every top-level element, mapping decoder errors to os_xml's XMLERR messages.
func parseXML(data []byte) ([]*xnode, *ConfigError) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var roots, stack []*xnode
	line := func() int { l, _ := dec.InputPos(); return l }
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, xmlSyntaxError(err, stack, line())
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xnode{name: t.Name.Local, line: line(), attrs: map[string]string{}}
			for _, a := range t.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else {
				roots = append(roots, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if len(stack) > 0 {
		return nil, confErr(fmt.Sprintf("(1226): Error reading XML file '%s': XMLERR: End of file and some elements were not closed. (line %d).", confRelPath, line()))
	}
	return roots, nil
}

func xmlSyntaxError(err error, stack []*xnode, line int) *ConfigError {
	msg := "XMLERR: Syntax error."
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		line = se.Line
		switch {
		case strings.Contains(se.Msg, "closed by"):
			open := ""
			if len(stack) > 0 {
				open = stack[len(stack)-1].name
			}
			msg = fmt.Sprintf("XMLERR: Element '%s' not closed.", open)
		case strings.HasPrefix(se.Msg, "unexpected end element"):
			name := strings.TrimSuffix(strings.TrimPrefix(se.Msg, "unexpected end element </"), ">")
			msg = fmt.Sprintf("XMLERR: Element '%s' not opened.", name)
		case strings.Contains(se.Msg, "unexpected EOF"):
			msg = "XMLERR: End of file and some elements were not closed."
		case strings.Contains(se.Msg, "attribute"):
			msg = "XMLERR: Attribute not closed."
		default:
			msg = "XMLERR: " + se.Msg + "."
		}
	}
	return confErr(fmt.Sprintf("(1226): Error reading XML file '%s': %s (line %d).", confRelPath, msg, line))
}

var knownSections = map[string]bool{
	"global": true, "alerts": true, "remote": true, "auth": true, "cluster": true, "logging": true,
	"rootcheck": true, "wodle": true, "sca": true, "vulnerability-detection": true, "indexer": true,
	"syscheck": true, "ruleset": true, "localfile": true, "command": true, "active-response": true,
	"labels": true, "integration": true, "reports": true, "database_output": true, "syslog_output": true,
	"email_alerts": true, "agentless": true, "socket": true, "osquery": true, "syscollector": true,
	"github": true, "office365": true, "agent-upgrade": true, "task-manager": true, "rule_test": true,
	"client_buffer": true, "emulator": true,
}

var knownChildren = map[string]map[string]bool{
	"global": set("jsonout_output", "alerts_log", "logall", "logall_json", "email_notification", "smtp_server",
		"email_from", "email_to", "email_maxperhour", "email_log_source", "agents_disconnection_time",
		"agents_disconnection_alert_time", "update_check", "white_list", "hostname", "memory_size",
		"geoip_db_path", "rotate_interval", "max_output_size", "stats", "host_information", "custom_alert_output",
		"queue_size", "prelude_output", "zeromq_output", "limits"),
	"alerts":   set("log_alert_level", "email_alert_level", "use_geoip"),
	"remote":   set("connection", "port", "protocol", "allowed-ips", "denied-ips", "local_ip", "ipv6", "queue_size", "rids_closing_time", "connection_overtake_time"),
	"auth":     set("disabled", "port", "use_source_ip", "purge", "use_password", "ciphers", "ssl_verify_host", "ssl_manager_cert", "ssl_manager_key", "ssl_auto_negotiate", "key_request", "limit_maxagents", "force", "ssl_agent_ca"),
	"cluster":  set("name", "node_name", "node_type", "key", "port", "bind_addr", "nodes", "hidden", "disabled"),
	"emulator": set("background_alerts_interval", "upgrade_send_time", "upgrade_restart_time", "upgrade_task_timeout"),
}

func set(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, v := range s {
		m[v] = true
	}
	return m
}

// ParseConfig parses and validates ossec.conf the way the daemons' "-t" test does.
func ParseConfig(data []byte) (*Config, error) {
	roots, cerr := parseXML(data)
	if cerr != nil {
		return nil, cerr
	}
	c := &Config{
		JSONOut: true, AlertsLog: true, LogAlertLevel: 3, EmailAlertLevel: 12,
		AgentsDisconnectionTime: 10 * time.Minute, AuthPort: 1515, ClusterDisabled: true,
		ClusterName: "siem", NodeName: "node01", BackgroundAlertsInterval: 20 * time.Second, UpgradeMaxThreads: 8,
	}
	found := false
	for _, root := range roots {
		if root.name != "ossec_config" {
			return nil, confErr(fmt.Sprintf("(1230): Invalid element in the configuration: '%s'.", root.name))
		}
		found = true
		for _, sec := range root.children {
			if !knownSections[sec.name] {
				return nil, confErr(fmt.Sprintf("(1230): Invalid element in the configuration: '%s'.", sec.name))
			}
			if allowed, ok := knownChildren[sec.name]; ok {
				for _, ch := range sec.children {
					if !allowed[ch.name] {
						return nil, confErr(fmt.Sprintf("(1230): Invalid element in the configuration: '%s'.", ch.name))
					}
				}
			}
			if err := c.apply(sec); err != nil {
				return nil, err
			}
		}
	}
	if !found {
		return nil, confErr(fmt.Sprintf("(1226): Error reading XML file '%s': XMLERR: End of file and some elements were not closed. (line 0).", confRelPath))
	}
	return c, nil
}

func invalidValue(el, v string) *ConfigError {
	return confErr(fmt.Sprintf("(1235): Invalid value for element '%s': %s.", el, strings.TrimSpace(v)))
}

func yesno(n *xnode) (bool, *ConfigError) {
	switch strings.TrimSpace(n.text) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, invalidValue(n.name, n.text)
}

func intVal(n *xnode, lo, hi int) (int, *ConfigError) {
	v, err := strconv.Atoi(strings.TrimSpace(n.text))
	if err != nil || v < lo || v > hi {
		return 0, invalidValue(n.name, n.text)
	}
	return v, nil
}

// timeVal parses Wazuh time values: a number with an optional s/m/h/d/w suffix.
func timeVal(n *xnode) (time.Duration, *ConfigError) {
	d, err := parseTimeframe(strings.TrimSpace(n.text))
	if err != nil {
		return 0, invalidValue(n.name, n.text)
	}
	return d, nil
}

// setter reads one element into the Config.
type setter func(*xnode) *ConfigError

// into returns the setter that parses an element and puts its value in dst.
func into[T any](dst *T, parse func(*xnode) (T, *ConfigError)) setter {
	return func(n *xnode) *ConfigError {
		v, err := parse(n)
		if err != nil {
			return err
		}
		*dst = v
		return nil
	}
}

// intIn is intVal with its range.
func intIn(lo, hi int) func(*xnode) (int, *ConfigError) {
	return func(n *xnode) (int, *ConfigError) { return intVal(n, lo, hi) }
}

func textVal(n *xnode) (string, *ConfigError) { return strings.TrimSpace(n.text), nil }

// setters maps each section's elements that the emulator uses to where their value goes (a
// <remote> block is read by remote).
func (c *Config) setters() map[string]map[string]setter {
	return map[string]map[string]setter{
		"global": {
			"jsonout_output":            into(&c.JSONOut, yesno),
			"alerts_log":                into(&c.AlertsLog, yesno),
			"agents_disconnection_time": into(&c.AgentsDisconnectionTime, timeVal),
		},
		"alerts": {
			"log_alert_level":   into(&c.LogAlertLevel, intIn(0, 16)),
			"email_alert_level": into(&c.EmailAlertLevel, intIn(0, 16)),
		},
		"auth": {
			"disabled": into(&c.AuthDisabled, yesno),
			"port":     into(&c.AuthPort, intIn(1, 65535)),
		},
		"cluster": {
			"disabled":  into(&c.ClusterDisabled, yesno),
			"name":      into(&c.ClusterName, textVal),
			"node_name": into(&c.NodeName, textVal),
		},
		"agent-upgrade": {
			"max_threads": into(&c.UpgradeMaxThreads, intIn(0, 256)),
		},
		"emulator": {
			"background_alerts_interval": into(&c.BackgroundAlertsInterval, timeVal),
			"upgrade_send_time":          into(&c.UpgradeSendTime, timeVal),
			"upgrade_restart_time":       into(&c.UpgradeRestartTime, timeVal),
			"upgrade_task_timeout":       into(&c.UpgradeTaskTimeout, timeVal),
		},
	}
}

// apply reads one section; of repeated elements the last wins, as in the daemons.
func (c *Config) apply(sec *xnode) error {
	if sec.name == "remote" {
		return c.remote(sec)
	}
	set := c.setters()[sec.name]
	for _, ch := range sec.children {
		if f := set[ch.name]; f != nil {
			if err := f(ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// remote reads one <remote> block, with the daemons' defaults for what it leaves out.
func (c *Config) remote(sec *xnode) error {
	r := Remote{Protocol: "tcp"}
	for _, ch := range sec.children {
		v := strings.TrimSpace(ch.text)
		switch ch.name {
		case "connection":
			if v != "secure" && v != "syslog" {
				return invalidValue(ch.name, v)
			}
			r.Connection = v
		case "port":
			p, err := intVal(ch, 1, 65535)
			if err != nil {
				return err
			}
			r.Port = p
		case "protocol":
			r.Protocol = strings.ToLower(v)
			if r.Protocol != "tcp" && r.Protocol != "udp" && r.Protocol != "tcp,udp" {
				return invalidValue(ch.name, v)
			}
		case "local_ip":
			r.LocalIP = v
		case "allowed-ips":
			r.AllowedIPs = append(r.AllowedIPs, v)
		}
	}
	if r.Connection == "" {
		r.Connection = "secure"
	}
	if r.Port == 0 {
		r.Port = 1514
		if r.Connection == "syslog" {
			r.Port = 514
		}
	}
	c.Remotes = append(c.Remotes, r)
	return nil
}

// parseTimeframe parses "10s", "5m", "2h", "7d", "1w" or bare seconds.
func parseTimeframe(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty timeframe")
	}
	unit := time.Second
	switch s[len(s)-1] {
	case 's':
		s = s[:len(s)-1]
	case 'm':
		unit, s = time.Minute, s[:len(s)-1]
	case 'h':
		unit, s = time.Hour, s[:len(s)-1]
	case 'd':
		unit, s = 24*time.Hour, s[:len(s)-1]
	case 'w':
		unit, s = 7*24*time.Hour, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid timeframe %q", s)
	}
	return time.Duration(n) * unit, nil
}

// DefaultOssecConf is the packaged ossec.conf for the given ports.
func DefaultOssecConf(agentPort, enrollPort, syslogPort int) []byte {
	return fmt.Appendf(nil, `<!--
  SIEM manager configuration (Wazuh 4.x ossec.conf structure).
-->

<ossec_config>
%s  <remote>
    <connection>secure</connection>
    <port>%d</port>
    <protocol>tcp</protocol>
    <queue_size>131072</queue_size>
    <local_ip>127.0.0.1</local_ip>
  </remote>

  <remote>
    <connection>syslog</connection>
    <port>%d</port>
    <protocol>udp</protocol>
    <allowed-ips>127.0.0.1</allowed-ips>
    <local_ip>127.0.0.1</local_ip>
  </remote>

  <ruleset>
    <decoder_dir>ruleset/decoders</decoder_dir>
    <rule_dir>ruleset/rules</rule_dir>
    <rule_exclude>0215-policy_rules.xml</rule_exclude>
    <list>etc/lists/audit-keys</list>
    <decoder_dir>etc/decoders</decoder_dir>
    <rule_dir>etc/rules</rule_dir>
  </ruleset>

%s  <!-- Lab emulator only: background alerts from the emulated agents (0 disables). -->
  <emulator>
    <background_alerts_interval>20s</background_alerts_interval>
  </emulator>
</ossec_config>
`, managerHead(false), agentPort, syslogPort, authCluster(enrollPort, "siem"))
}
