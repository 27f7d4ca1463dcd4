package manager

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// decoded holds the decoder's result.
type decoded struct {
	parent, name string
	fields       []kv // in decoder order
}

type kv struct{ k, v string }

func (d *decoded) get(k string) string {
	for _, f := range d.fields {
		if f.k == k {
			return f.v
		}
	}
	return ""
}

type childDecoder struct {
	re    *regexp.Regexp
	order []string
}

// Stock decoders (a subset of ruleset/decoders/0310-ssh_decoders.xml and 0340-sudo_decoders.xml).
var sshdDecoders = []childDecoder{
	{regexp.MustCompile(`^Failed \S+ for (?:invalid|illegal) user (\S+) from (\S+) port (\d+)`), []string{"srcuser", "srcip", "srcport"}},
	{regexp.MustCompile(`^Failed \S+ for (\S+) from (\S+) port (\d+)`), []string{"dstuser", "srcip", "srcport"}},
	{regexp.MustCompile(`^Accepted \S+ for (\S+) from (\S+) port (\d+)`), []string{"dstuser", "srcip", "srcport"}},
	{regexp.MustCompile(`^(?:Invalid|Illegal) user (\S+) from (\S+)(?: port (\d+))?`), []string{"srcuser", "srcip", "srcport"}},
}

var sudoDecoder = regexp.MustCompile(`^\s*(\S+) : (?:.*; )?TTY=(\S+) ; PWD=(\S+) ; USER=(\S+) ; COMMAND=(.+)$`)

func decode(ev *Event) *decoded {
	switch ev.Program {
	case "sshd":
		d := &decoded{parent: "sshd", name: "sshd"}
		for _, cd := range sshdDecoders {
			if m := cd.re.FindStringSubmatch(ev.Message); m != nil {
				for i, k := range cd.order {
					if m[i+1] != "" {
						d.fields = append(d.fields, kv{k, m[i+1]})
					}
				}
				break
			}
		}
		return d
	case "sudo":
		d := &decoded{parent: "sudo", name: "sudo"}
		if m := sudoDecoder.FindStringSubmatch(ev.Message); m != nil {
			d.fields = []kv{{"srcuser", m[1]}, {"tty", m[2]}, {"pwd", m[3]}, {"dstuser", m[4]}, {"command", m[5]}}
		}
		return d
	}
	return nil
}

// Rule is an analysis rule.
type Rule struct {
	ID          int
	Level       int
	Description string
	IfSID       []int
	DecodedAs   string
	ProgramName *regexp.Regexp
	Match       string // OS_Match expression
	Regex       *regexp.Regexp
	SrcIP       []string
	User        *regexp.Regexp
	Groups      []string // group chain: file group(s) then the rule's own groups
	Mitre       []string
	NoAlert     bool
	Generic     bool // matches any event (rule 1)
	children    []*Rule
}

// osMatch implements OS_Match: '|' alternatives, '^' and '$' anchors, case-insensitive substrings.
func osMatch(expr, s string) bool {
	ls := strings.ToLower(s)
	for _, alt := range strings.Split(expr, "|") {
		a := strings.ToLower(alt)
		start, end := strings.HasPrefix(a, "^"), strings.HasSuffix(a, "$") && !strings.HasSuffix(a, `\$`)
		a = strings.TrimPrefix(a, "^")
		if end {
			a = strings.TrimSuffix(a, "$")
		}
		switch {
		case start && end:
			if ls == a {
				return true
			}
		case start:
			if strings.HasPrefix(ls, a) {
				return true
			}
		case end:
			if strings.HasSuffix(ls, a) {
				return true
			}
		default:
			if strings.Contains(ls, a) {
				return true
			}
		}
	}
	return false
}

func (r *Rule) matches(ev *Event, d *decoded) bool {
	if r.DecodedAs != "" && (d == nil || d.parent != r.DecodedAs) {
		return false
	}
	if r.ProgramName != nil && !r.ProgramName.MatchString(ev.Program) {
		return false
	}
	if r.Match != "" && !osMatch(r.Match, ev.Message) {
		return false
	}
	if r.Regex != nil && !r.Regex.MatchString(ev.Message) {
		return false
	}
	if len(r.SrcIP) > 0 {
		ip := ""
		if d != nil {
			ip = d.get("srcip")
		}
		if !ipMatches(r.SrcIP, ip) {
			return false
		}
	}
	if r.User != nil {
		u := ""
		if d != nil {
			u = d.get("srcuser") + d.get("dstuser")
		}
		if !r.User.MatchString(u) {
			return false
		}
	}
	return true
}

func ipMatches(specs []string, ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	for _, s := range specs {
		neg := strings.HasPrefix(s, "!")
		s = strings.TrimPrefix(s, "!")
		ok := false
		if p, err := netip.ParsePrefix(s); err == nil {
			ok = p.Contains(addr)
		} else if a, err := netip.ParseAddr(s); err == nil {
			ok = a == addr
		}
		if ok != neg {
			return true
		}
	}
	return false
}

var complianceOrder = []string{"pci_dss", "gpg13", "gdpr", "hipaa", "nist_800_53", "tsc"}

func splitGroups(list string) []string {
	var out []string
	for _, g := range strings.Split(list, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

var sshCompliance = "gdpr_IV_35.7.d,gdpr_IV_32.2,gpg13_7.1,hipaa_164.312.b,nist_800_53_AU.14,nist_800_53_AC.7,pci_dss_10.2.4,pci_dss_10.2.5,tsc_CC6.1,tsc_CC6.8,tsc_CC7.2,tsc_CC7.3"

// stockRules is the built-in subset of the Wazuh ruleset (0010-rules_config, 0020-syslog, 0095-sshd,
// 0050-sudo...).
func stockRules() []*Rule {
	return []*Rule{
		{ID: 1, Level: 0, Description: "Generic template for all syslog rules.", Groups: []string{"syslog"}, NoAlert: true, Generic: true},
		{ID: 1002, Level: 2, IfSID: []int{1}, Description: "Unknown problem somewhere in the system.",
			Match:  "core_dumped|failure|error|attack| bad |illegal |denied|refused|unauthorized|fatal|failed|Segmentation Fault|Corrupted",
			Groups: []string{"syslog", "errors", "gpg13_4.3"}},
		{ID: 5700, Level: 0, DecodedAs: "sshd", Description: "SSHD messages grouped.", Groups: []string{"syslog", "sshd"}},
		{ID: 5710, Level: 5, IfSID: []int{5700}, Match: "illegal user|invalid user", Description: "sshd: Attempt to login using a non-existent user",
			Mitre:  []string{"T1110.001", "T1021.004"},
			Groups: append([]string{"syslog", "sshd", "authentication_failed", "invalid_login"}, splitGroups(sshCompliance+",nist_800_53_AU.6,pci_dss_10.6.1")...)},
		{ID: 5715, Level: 3, IfSID: []int{5700}, Match: "^Accepted|authenticated.$", Description: "sshd: authentication success.",
			Mitre:  []string{"T1078", "T1021"},
			Groups: []string{"syslog", "sshd", "authentication_success", "gdpr_IV_32.2", "gpg13_7.1", "gpg13_7.2", "hipaa_164.312.b", "nist_800_53_AU.14", "nist_800_53_AC.7", "pci_dss_10.2.5", "tsc_CC6.8", "tsc_CC7.2", "tsc_CC7.3"}},
		{ID: 5716, Level: 5, IfSID: []int{5700}, Match: "^Failed|^error: PAM: Authentication", Description: "sshd: authentication failed.",
			Mitre:  []string{"T1110.001", "T1021.004"},
			Groups: append([]string{"syslog", "sshd", "authentication_failed"}, splitGroups(sshCompliance)...)},
		{ID: 5400, Level: 0, DecodedAs: "sudo", Description: "Initial group for sudo messages.", Groups: []string{"syslog", "sudo"}},
		{ID: 5402, Level: 3, IfSID: []int{5400}, Regex: regexp.MustCompile(`; USER=root ; COMMAND=`), Description: "Successful sudo to ROOT executed.",
			Mitre:  []string{"T1548.003"},
			Groups: []string{"syslog", "sudo", "pci_dss_10.2.5", "pci_dss_10.2.2", "gpg13_7.6", "gpg13_7.8", "gpg13_7.13", "gdpr_IV_32.2", "hipaa_164.312.b", "nist_800_53_AU.14", "nist_800_53_AC.7", "nist_800_53_AC.6", "tsc_CC6.8", "tsc_CC7.2", "tsc_CC7.3"}},
	}
}

var mitreTable = map[string]struct {
	tactics   []string
	technique string
}{
	"T1110.001": {[]string{"Credential Access"}, "Password Guessing"},
	"T1021.004": {[]string{"Lateral Movement"}, "SSH"},
	"T1078":     {[]string{"Defense Evasion", "Persistence", "Privilege Escalation", "Initial Access"}, "Valid Accounts"},
	"T1021":     {[]string{"Lateral Movement"}, "Remote Services"},
	"T1548.003": {[]string{"Privilege Escalation", "Defense Evasion"}, "Sudo and Sudo Caching"},
	"T1110":     {[]string{"Credential Access"}, "Brute Force"},
}

// Ruleset is the rule tree.
type Ruleset struct {
	roots []*Rule
	byID  map[int]*Rule
}

// NewRuleset builds the tree from the stock rules plus local rules (local ones are checked first).
func NewRuleset(local []*Rule) (*Ruleset, error) {
	rs := &Ruleset{byID: map[int]*Rule{}}
	stock := stockRules()
	for _, r := range append(append([]*Rule{}, stock...), local...) {
		if _, dup := rs.byID[r.ID]; dup {
			return nil, fmt.Errorf("duplicate rule id %d", r.ID)
		}
		rs.byID[r.ID] = r
	}
	add := func(r *Rule, first bool) error {
		if len(r.IfSID) == 0 {
			if first {
				rs.roots = append([]*Rule{r}, rs.roots...)
			} else {
				rs.roots = append(rs.roots, r)
			}
			return nil
		}
		for _, pid := range r.IfSID {
			p, ok := rs.byID[pid]
			if !ok {
				return fmt.Errorf("rule %d: if_sid %d does not exist", r.ID, pid)
			}
			if first {
				p.children = append([]*Rule{r}, p.children...)
			} else {
				p.children = append(p.children, r)
			}
		}
		return nil
	}
	for _, r := range stock {
		if err := add(r, false); err != nil {
			return nil, err
		}
	}
	// Generic rules go last among roots so specific decoders win.
	var generic, specific []*Rule
	for _, r := range rs.roots {
		if r.Generic {
			generic = append(generic, r)
		} else {
			specific = append(specific, r)
		}
	}
	rs.roots = append(specific, generic...)
	for i := len(local) - 1; i >= 0; i-- {
		if err := add(local[i], true); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// Evaluate returns the deepest matching rule, or nil.
func (rs *Ruleset) Evaluate(ev *Event, d *decoded) *Rule {
	for _, r := range rs.roots {
		if r.matches(ev, d) {
			return descend(r, ev, d)
		}
	}
	return nil
}

func descend(r *Rule, ev *Event, d *decoded) *Rule {
	for _, c := range r.children {
		if c.matches(ev, d) {
			return descend(c, ev, d)
		}
	}
	return r
}

// LoadLocalRules parses etc/rules/local_rules.xml ("<group name=...><rule id= level=>...</rule></group>").
// A missing file means no local rules; an invalid one is a configuration error.
func LoadLocalRules(path, relName string) ([]*Rule, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read local rules: %w", err)
	}
	roots, cerr := parseXML(data)
	loadErr := func(lines ...string) error {
		out := make([]string, 0, len(lines)+1)
		for _, l := range lines {
			out = append(out, confDaemon+": ERROR: "+l)
		}
		out = append(out, confDaemon+": CRITICAL: (1220): Error loading the rules: '"+relName+"'.")
		return &ConfigError{Lines: out}
	}
	if cerr != nil {
		msgs := cerr.Messages()
		return nil, loadErr(strings.Replace(msgs[0], "'"+confRelPath+"'", "'"+relName+"'", 1))
	}
	var out []*Rule
	for _, g := range roots {
		if g.name != "group" {
			return nil, loadErr(fmt.Sprintf("(1230): Invalid element in the configuration: '%s'.", g.name))
		}
		fileGroups := splitGroups(g.attrs["name"])
		for _, rn := range g.children {
			if rn.name != "rule" {
				return nil, loadErr(fmt.Sprintf("(1230): Invalid element in the configuration: '%s'.", rn.name))
			}
			r, err := parseRule(rn, fileGroups)
			if err != nil {
				return nil, loadErr(err.Error())
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func parseRule(n *xnode, fileGroups []string) (*Rule, error) {
	id, err := strconv.Atoi(n.attrs["id"])
	if err != nil || id <= 0 || id > 999999 {
		return nil, fmt.Errorf("(7602): Invalid rule id '%s'.", n.attrs["id"])
	}
	lvl, err := strconv.Atoi(n.attrs["level"])
	if err != nil || lvl < 0 || lvl > 16 {
		return nil, fmt.Errorf("(1235): Invalid value for element 'level': %s.", n.attrs["level"])
	}
	r := &Rule{ID: id, Level: lvl, Groups: append([]string{}, fileGroups...)}
	for _, c := range n.children {
		v := strings.TrimSpace(c.text)
		switch c.name {
		case "if_sid":
			for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
				p, err := strconv.Atoi(s)
				if err != nil {
					return nil, fmt.Errorf("(1235): Invalid value for element 'if_sid': %s.", v)
				}
				r.IfSID = append(r.IfSID, p)
			}
		case "match":
			r.Match = v
		case "regex", "program_name", "user":
			re, err := regexp.Compile(v)
			if err != nil {
				return nil, fmt.Errorf("(1452): Syntax error on regex: '%s': %d.", v, 2)
			}
			switch c.name {
			case "regex":
				r.Regex = re
			case "program_name":
				r.ProgramName = re
			default:
				r.User = re
			}
		case "decoded_as":
			r.DecodedAs = v
		case "srcip":
			r.SrcIP = append(r.SrcIP, v)
		case "description":
			r.Description = v
		case "group":
			r.Groups = append(r.Groups, splitGroups(v)...)
		case "mitre":
			for _, m := range c.children {
				r.Mitre = append(r.Mitre, strings.TrimSpace(m.text))
			}
		case "options":
			if strings.Contains(v, "no_log") {
				r.NoAlert = true
			}
		case "info", "same_source_ip", "frequency", "timeframe", "hostname", "field", "if_group", "category":
		default:
			return nil, fmt.Errorf("(7600): Invalid option '%s' for rule '%d'.", c.name, id)
		}
	}
	if s := n.attrs["noalert"]; s == "1" {
		r.NoAlert = true
	}
	return r, nil
}
