// Package rules checks the manager's local rules and decoders files
// (etc/rules/*.xml, etc/decoders/*.xml): well-formed XML fragments (Wazuh
// files have no single root), rule ids >= 100000 and unique, if_sid /
// if_matched_sid targets that exist (locally, or in the stock range below
// 100000), decoder parents that exist, and `order` field counts that match
// the regex capture groups. Problems carry file and line.
package rules

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Severities.
const (
	Error   = "error"
	Warning = "warning"
)

// MinLocalID is the first id of the local (user) rule range.
const MinLocalID = 100000

// MaxRuleID is the largest rule id the manager accepts.
const MaxRuleID = 999999

// Problem is one finding.
type Problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Severity, p.Message)
}

// Report is the outcome of Check.
type Report struct {
	Dir      string    `json:"dir"`
	Files    []string  `json:"files"`
	Rules    int       `json:"rules"`
	Decoders int       `json:"decoders"`
	Problems []Problem `json:"problems"`
}

// Errors counts the problems of severity error.
func (r Report) Errors() int {
	n := 0
	for _, p := range r.Problems {
		if p.Severity == Error {
			n++
		}
	}
	return n
}

// Options tune Check.
type Options struct {
	// Dir holds rules/ and decoders/ (the manager's etc directory).
	Dir string
	// StockDecoders are the decoder names shipped with the manager. When
	// nil, StockDecoderDir is read; when that is empty or missing, a
	// built-in list of common stock parents is used and an unknown parent is
	// a warning instead of an error.
	StockDecoders   map[string]bool
	StockDecoderDir string
}

// commonStockDecoders are parents local decoders commonly attach to.
var commonStockDecoders = []string{"sshd", "sudo", "pam", "su", "syslog", "json", "windows_eventchannel", "web-accesslog",
	"apache-errorlog", "nginx-errorlog", "iptables", "kernel", "auditd", "dpkg-decoder", "yum", "cron", "postfix",
	"dovecot", "vsftpd", "proftpd", "named", "ossec", "rootcheck", "syscheck_integrity_changed", "agent-upgrade",
	"systemd", "docker", "cisco-ios", "fortigate-firewall-v5", "pfsense", "squid", "mysql_log", "postgresql_log"}

// node is an XML element with its line.
type node struct {
	name     string
	attrs    map[string]string
	text     string
	line     int
	children []*node
}

// parseFragment parses a Wazuh XML file: a sequence of top-level elements,
// wrapped in a synthetic root. Line numbers are those of the file.
func parseFragment(data []byte) ([]*node, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	// An XML declaration is only legal at the very start: blank it out
	// (keeping newlines, so lines do not move) before wrapping.
	if t := bytes.TrimLeft(data, " \t\r\n"); bytes.HasPrefix(t, []byte("<?xml")) {
		start := len(data) - len(t)
		if end := bytes.Index(data[start:], []byte("?>")); end >= 0 {
			data = append([]byte(nil), data...)
			for i := start; i < start+end+2; i++ {
				if data[i] != '\n' {
					data[i] = ' '
				}
			}
		}
	}
	const root = "siemctl-fragment-root"
	wrapped := make([]byte, 0, len(data)+2*len(root)+5)
	wrapped = append(wrapped, "<"+root+">"...)
	wrapped = append(wrapped, data...)
	wrapped = append(wrapped, "</"+root+">"...)
	d := xml.NewDecoder(bytes.NewReader(wrapped))
	d.Strict = true
	var stack []*node
	var top []*node
	for {
		line, _ := d.InputPos()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				msg := strings.ReplaceAll(se.Msg, "</"+root+">", "the end of the file")
				msg = strings.ReplaceAll(msg, "<"+root+">", "the start of the file")
				return nil, &lineError{line: se.Line, msg: "not well-formed XML: " + msg}
			}
			return nil, &lineError{line: line, msg: "not well-formed XML: " + err.Error()}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, attrs: map[string]string{}, line: line}
			if len(stack) == 0 && n.name == root {
				stack = append(stack, n)
				continue
			}
			for _, a := range t.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			parent := stack[len(stack)-1]
			if parent.name == root && len(stack) == 1 {
				top = append(top, n)
			} else {
				parent.children = append(parent.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 1 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	return top, nil
}

type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return e.msg }

// ruleDef is one local rule.
type ruleDef struct {
	id        int
	file      string
	line      int
	overwrite bool
	refs      []ref
}

type ref struct {
	elem string
	ids  string
	line int
}

type decoderDef struct {
	name, parent string
	file         string
	line, pline  int
}

// Check parses and validates the files under o.Dir. An error means the
// check could not run (e.g. Dir missing); findings are in the Report.
func Check(o Options) (Report, error) {
	rep := Report{Dir: o.Dir, Files: []string{}, Problems: []Problem{}}
	fi, err := os.Stat(o.Dir)
	if err != nil {
		return rep, fmt.Errorf("rules directory: %w", err)
	}
	if !fi.IsDir() {
		return rep, fmt.Errorf("rules directory %s is not a directory", o.Dir)
	}
	ruleFiles, err := filepath.Glob(filepath.Join(o.Dir, "rules", "*.xml"))
	if err != nil {
		return rep, err
	}
	decoderFiles, err := filepath.Glob(filepath.Join(o.Dir, "decoders", "*.xml"))
	if err != nil {
		return rep, err
	}
	add := func(file string, line int, sev, format string, args ...any) {
		rep.Problems = append(rep.Problems, Problem{File: file, Line: line, Severity: sev, Message: fmt.Sprintf(format, args...)})
	}
	var rules []ruleDef
	for _, f := range ruleFiles {
		rel := relName(o.Dir, f)
		rep.Files = append(rep.Files, rel)
		top, err := readFragment(f)
		if err != nil {
			addErr(add, rel, err)
			continue
		}
		for _, g := range top {
			switch g.name {
			case "group":
				if strings.TrimSpace(g.attrs["name"]) == "" {
					add(rel, g.line, Warning, "<group> without a name attribute")
				}
				for _, r := range g.children {
					if r.name != "rule" {
						add(rel, r.line, Error, "unexpected <%s> in <group>: only <rule> is allowed", r.name)
						continue
					}
					if rd, ok := checkRule(rel, r, add); ok {
						rules = append(rules, rd)
					}
				}
			case "var":
			default:
				add(rel, g.line, Error, "unexpected top-level <%s>: rules files hold <group> and <var> elements", g.name)
			}
		}
	}
	rep.Rules = len(rules)
	byID := map[int]ruleDef{}
	for _, r := range rules {
		if prev, dup := byID[r.id]; dup && !r.overwrite {
			add(r.file, r.line, Error, "rule id %d is already defined at %s:%d", r.id, prev.file, prev.line)
			continue
		}
		byID[r.id] = r
	}
	for _, r := range rules {
		for _, rf := range r.refs {
			for _, s := range strings.FieldsFunc(rf.ids, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' || c == '\n' }) {
				id, err := strconv.Atoi(s)
				switch {
				case err != nil:
					add(r.file, rf.line, Error, "rule %d: <%s> %q is not a rule id", r.id, rf.elem, s)
				case id < MinLocalID:
					// Stock range: accepted as a stock rule.
				case byID[id].id == 0:
					add(r.file, rf.line, Error, "rule %d: <%s> refers to rule %d, which is not defined", r.id, rf.elem, id)
				}
			}
		}
	}

	stock, verified := stockDecoders(o)
	var decs []decoderDef
	local := map[string]bool{}
	for _, f := range decoderFiles {
		rel := relName(o.Dir, f)
		rep.Files = append(rep.Files, rel)
		top, err := readFragment(f)
		if err != nil {
			addErr(add, rel, err)
			continue
		}
		for _, d := range top {
			switch d.name {
			case "decoder":
				if dd, ok := checkDecoder(rel, d, add); ok {
					decs = append(decs, dd)
					local[dd.name] = true
				}
			case "var":
			default:
				add(rel, d.line, Error, "unexpected top-level <%s>: decoders files hold <decoder> and <var> elements", d.name)
			}
		}
	}
	rep.Decoders = len(decs)
	for _, d := range decs {
		if d.parent == "" || local[d.parent] || stock[d.parent] {
			continue
		}
		if verified {
			add(d.file, d.pline, Error, "decoder %q: parent %q is not defined", d.name, d.parent)
		} else {
			add(d.file, d.pline, Warning, "decoder %q: parent %q is not a local decoder and the stock decoders could not be read to verify it", d.name, d.parent)
		}
	}
	sort.SliceStable(rep.Problems, func(i, j int) bool {
		a, b := rep.Problems[i], rep.Problems[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return rep, nil
}

func relName(dir, f string) string {
	if r, err := filepath.Rel(dir, f); err == nil {
		return r
	}
	return f
}

func readFragment(path string) ([]*node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseFragment(b)
}

func addErr(add func(string, int, string, string, ...any), file string, err error) {
	var le *lineError
	if errors.As(err, &le) {
		add(file, le.line, Error, "%s", le.msg)
		return
	}
	add(file, 0, Error, "%v", err)
}

func checkRule(file string, r *node, add func(string, int, string, string, ...any)) (ruleDef, bool) {
	rawID, hasID := r.attrs["id"]
	if !hasID {
		add(file, r.line, Error, "<rule> without an id")
		return ruleDef{}, false
	}
	id, err := strconv.Atoi(strings.TrimSpace(rawID))
	if err != nil || id <= 0 || id > MaxRuleID {
		add(file, r.line, Error, "rule id %q is not a number between 1 and %d", rawID, MaxRuleID)
		return ruleDef{}, false
	}
	rd := ruleDef{id: id, file: file, line: r.line, overwrite: r.attrs["overwrite"] == "yes"}
	if id < MinLocalID && !rd.overwrite {
		add(file, r.line, Error, "rule id %d is below %d: local rules use ids %d and up (or overwrite=\"yes\" to replace a stock rule)", id, MinLocalID, MinLocalID)
	}
	if lv, ok := r.attrs["level"]; !ok {
		add(file, r.line, Error, "rule %d has no level", id)
	} else if n, err := strconv.Atoi(strings.TrimSpace(lv)); err != nil || n < 0 || n > 16 {
		add(file, r.line, Error, "rule %d: level %q is not a number between 0 and 16", id, lv)
	}
	for _, c := range r.children {
		switch c.name {
		case "if_sid", "if_matched_sid":
			if strings.TrimSpace(c.text) == "" {
				add(file, c.line, Error, "rule %d: empty <%s>", id, c.name)
				continue
			}
			rd.refs = append(rd.refs, ref{elem: c.name, ids: c.text, line: c.line})
		}
	}
	return rd, true
}

func checkDecoder(file string, d *node, add func(string, int, string, string, ...any)) (decoderDef, bool) {
	name := strings.TrimSpace(d.attrs["name"])
	if name == "" {
		add(file, d.line, Error, "<decoder> without a name")
		return decoderDef{}, false
	}
	dd := decoderDef{name: name, file: file, line: d.line}
	groups := 0
	var order *node
	for _, c := range d.children {
		switch c.name {
		case "parent":
			dd.parent, dd.pline = strings.TrimSpace(c.text), c.line
			if dd.parent == "" {
				add(file, c.line, Error, "decoder %q: empty <parent>", name)
			}
		case "regex":
			n, err := captureGroups(c.text, c.attrs["type"])
			if err != nil {
				add(file, c.line, Error, "decoder %q: <regex>: %v", name, err)
				continue
			}
			groups += n
		case "order":
			order = c
		}
	}
	if order != nil {
		fields := 0
		for _, f := range strings.Split(order.text, ",") {
			if strings.TrimSpace(f) != "" {
				fields++
			} else {
				add(file, order.line, Error, "decoder %q: empty field name in <order>", name)
			}
		}
		if fields != groups {
			add(file, order.line, Error, "decoder %q: <order> names %d fields but the <regex> captures %d groups", name, fields, groups)
		}
	} else if groups > 0 {
		add(file, d.line, Warning, "decoder %q: <regex> captures %d groups but there is no <order>", name, groups)
	}
	return dd, true
}

// captureGroups counts the capture groups of a decoder regex: OS_Regex by
// default (every unescaped '(' captures), PCRE2 with type="pcre2" (skipping
// character classes and non-capturing (?…) groups, counting named groups).
func captureGroups(expr, typ string) (int, error) {
	pcre := strings.EqualFold(strings.TrimSpace(typ), "pcre2")
	n, depth := 0, 0
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '\\':
			i++
		case c == '[' && pcre:
			j := i + 1
			if j < len(expr) && expr[j] == '^' {
				j++
			}
			if j < len(expr) && expr[j] == ']' {
				j++
			}
			for j < len(expr) && expr[j] != ']' {
				if expr[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return 0, errors.New("unterminated character class")
			}
			i = j
		case c == '(':
			depth++
			if !pcre {
				n++
				continue
			}
			rest := expr[i+1:]
			switch {
			case strings.HasPrefix(rest, "?<=") || strings.HasPrefix(rest, "?<!"):
			case strings.HasPrefix(rest, "?<") || strings.HasPrefix(rest, "?P<") || strings.HasPrefix(rest, "?'"):
				n++
			case strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, "*"):
			default:
				n++
			}
		case c == ')':
			depth--
			if depth < 0 {
				return 0, errors.New("unbalanced ')'")
			}
		}
	}
	if depth != 0 {
		return 0, errors.New("unbalanced '('")
	}
	return n, nil
}

// stockDecoders returns the stock decoder names and whether they come from
// the real ruleset (so an unknown parent is certainly an error).
func stockDecoders(o Options) (map[string]bool, bool) {
	if o.StockDecoders != nil {
		return o.StockDecoders, true
	}
	if o.StockDecoderDir != "" {
		files, _ := filepath.Glob(filepath.Join(o.StockDecoderDir, "*.xml"))
		if len(files) > 0 {
			out := map[string]bool{}
			for _, f := range files {
				top, err := readFragment(f)
				if err != nil {
					continue
				}
				for _, d := range top {
					if d.name == "decoder" && d.attrs["name"] != "" {
						out[strings.TrimSpace(d.attrs["name"])] = true
					}
				}
			}
			return out, true
		}
	}
	out := make(map[string]bool, len(commonStockDecoders))
	for _, n := range commonStockDecoders {
		out[n] = true
	}
	return out, false
}
