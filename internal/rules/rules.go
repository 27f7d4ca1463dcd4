// Package rules checks rules and decoders the way the manager's analysis
// daemon (wazuh-analysisd) loads them: its own XML dialect, its regex
// engines (OS_Regex, OS_Match, PCRE2), the stock ruleset loaded first so
// that if_sid, if_matched_sid, if_group, decoded_as and decoder parents
// resolve and local ids that collide with stock ids are found, and its
// severities: an error is what stops the daemon from starting, a warning is
// what it loads but ignores or degrades. Findings carry file, line and the
// daemon's message code.
package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Severities.
const (
	Error   = "error"
	Warning = "warning"
)

// MinLocalID is the first id of the range Wazuh leaves to local rules.
const MinLocalID = 100000

// MaxRuleID is the largest rule id the manager accepts.
const MaxRuleID = 999999

// Problem is one finding. Code is the manager's message code for it (e.g.
// "2107", "7617"), empty where the manager says nothing (it loads the file
// but the rule or field silently does not do what it says).
type Problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

func (p Problem) String() string {
	code := ""
	if p.Code != "" {
		code = " (" + p.Code + ")"
	}
	return fmt.Sprintf("%s:%d: %s%s: %s", p.File, p.Line, p.Severity, code, p.Message)
}

// Report is the outcome of Check.
type Report struct {
	Dir      string    `json:"dir"`
	Stock    string    `json:"stock"` // the stock ruleset read ("" when none)
	AsStock  bool      `json:"as_stock"`
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
	// Dir holds rules/ and decoders/: the manager's etc directory (local
	// files), or with AsStock the stock ruleset directory.
	Dir string
	// StockDir is the stock ruleset ({install_dir}/ruleset, holding rules/
	// and decoders/), loaded before Dir as the manager does. Empty or
	// missing: references that may point into the stock ruleset are not
	// verified, and a warning says so.
	StockDir string
	// AsStock checks Dir as the stock ruleset itself (StockDir unused).
	AsStock bool
	// Exclude lists <rule_exclude>/<decoder_exclude> values: a file name
	// (excluded in every directory) or a path such as
	// ruleset/decoders/0310-ssh_decoders.xml. Those of Dir/ossec.conf are
	// added.
	Exclude []string
}

// ruleFile is one file in load order.
type ruleFile struct {
	path    string // on disk
	display string // in findings
	rel     string // "ruleset/decoders/x.xml" or "etc/decoders/x.xml", for exclusions
	checked bool   // part of what is being checked (not the stock context)
}

// checker holds the manager's state while loading, and the findings.
type checker struct {
	rep       *Report
	stockRead bool

	decStore map[string]bool
	roots    map[string][]*decNode
	decCount int

	loaded    map[int]*ruleInfo
	ruleCount int

	// counting is true while a checked file loads: Report.Rules and
	// Report.Decoders count what the checked files add.
	counting bool
}

type decNode struct {
	name                           string
	prematch, regex, plugin, child bool
	children                       []*decNode
	at                             string // file:line
}

type ruleInfo struct {
	id     int
	file   string
	line   int
	ifSID  string
	groups string
	stock  bool
}

func (c *checker) add(file string, line int, sev, code, format string, args ...any) {
	c.rep.Problems = append(c.rep.Problems, Problem{File: file, Line: line, Severity: sev, Code: code, Message: fmt.Sprintf(format, args...)})
}

// Check loads the stock ruleset (unless AsStock) and then the files under
// o.Dir, in the manager's order (decoders before rules, each directory's
// *.xml by name). An error means the check could not run (e.g. Dir
// missing); findings are in the Report.
func Check(o Options) (Report, error) {
	rep := Report{Dir: o.Dir, AsStock: o.AsStock, Files: []string{}, Problems: []Problem{}}
	fi, err := os.Stat(o.Dir)
	if err != nil {
		return rep, fmt.Errorf("rules directory: %w", err)
	}
	if !fi.IsDir() {
		return rep, fmt.Errorf("rules directory %s is not a directory", o.Dir)
	}
	c := &checker{rep: &rep, decStore: internalDecoders(), roots: map[string][]*decNode{}, loaded: map[int]*ruleInfo{}}

	exclude := append([]string{}, o.Exclude...)
	if !o.AsStock {
		ex, err := confExcludes(filepath.Join(o.Dir, "ossec.conf"))
		if err != nil {
			c.add("ossec.conf", errLine(err), Error, "1226", "%v", err)
		}
		exclude = append(exclude, ex...)
	}

	var decFiles, ruleFiles []ruleFile
	checkedPrefix := "etc"
	if o.AsStock {
		checkedPrefix = "ruleset"
	} else if o.StockDir != "" {
		d, derr := listXML(filepath.Join(o.StockDir, "decoders"), "ruleset/decoders", false)
		r, rerr := listXML(filepath.Join(o.StockDir, "rules"), "ruleset/rules", false)
		missing := func(err error) bool { return err == nil || errors.Is(err, fs.ErrNotExist) }
		if missing(derr) && missing(rerr) && len(d)+len(r) > 0 {
			c.stockRead = true
			rep.Stock = o.StockDir
			decFiles, ruleFiles = d, r
		}
	}
	if !o.AsStock && !c.stockRead {
		where := o.StockDir
		if where == "" {
			where = "(none given)"
		}
		c.add(where, 0, Warning, "", "stock ruleset not found at %s: references to stock rules and decoders (if_sid, parent, decoded_as) and collisions with stock ids are not verified; give --stock DIR", where)
	}
	for _, kind := range []struct {
		sub   string
		files *[]ruleFile
	}{{"decoders", &decFiles}, {"rules", &ruleFiles}} {
		l, err := listXML(filepath.Join(o.Dir, kind.sub), checkedPrefix+"/"+kind.sub, true)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, err
		}
		*kind.files = append(*kind.files, l...)
	}
	if o.AsStock {
		rep.Stock = o.Dir
	}

	c.loadFiles(decFiles, exclude, c.loadDecoderFile)
	c.loadFiles(ruleFiles, exclude, c.loadRuleFile)
	rep.Rules, rep.Decoders = c.ruleCount, c.decCount
	sort.SliceStable(rep.Problems, func(i, j int) bool {
		a, b := rep.Problems[i], rep.Problems[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return rep, nil
}

// loadFiles loads each file that is not excluded with load, in order.
func (c *checker) loadFiles(files []ruleFile, exclude []string, load func(ruleFile)) {
	for _, f := range files {
		if excluded(f, exclude) {
			continue
		}
		if f.checked {
			c.rep.Files = append(c.rep.Files, f.display)
		}
		c.counting = f.checked
		load(f)
	}
}

// listXML lists dir's *.xml files by name, as the manager loads them.
func listXML(dir, rel string, checked bool) ([]ruleFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []ruleFile
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".xml") {
			continue
		}
		display := filepath.Join(dir, e.Name())
		if checked {
			display = filepath.Join(filepath.Base(dir), e.Name())
		}
		out = append(out, ruleFile{path: filepath.Join(dir, e.Name()), display: display, rel: rel + "/" + e.Name(), checked: checked})
	}
	return out, nil
}

func excluded(f ruleFile, exclude []string) bool {
	for _, x := range exclude {
		x = strings.TrimSpace(x)
		if x == "" {
			continue
		}
		if !strings.Contains(x, "/") {
			if x == filepath.Base(f.rel) {
				return true
			}
			continue
		}
		x = filepath.ToSlash(filepath.Clean(x))
		if x == f.rel || strings.HasSuffix(x, "/"+f.rel) {
			return true
		}
	}
	return false
}

// confExcludes reads <rule_exclude> and <decoder_exclude> from the
// <ruleset> sections of an ossec.conf (absent: none).
func confExcludes(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	top, err := parseXML(b)
	if err != nil {
		return nil, fmt.Errorf("ossec.conf: %w", err)
	}
	var out []string
	for _, n := range top {
		for _, rs := range n.children {
			if rs.name != "ruleset" {
				continue
			}
			for _, e := range rs.children {
				if e.name == "rule_exclude" || e.name == "decoder_exclude" {
					out = append(out, strings.TrimSpace(e.text))
				}
			}
		}
	}
	return out, nil
}

func errLine(err error) int {
	var xe *xmlError
	if errors.As(err, &xe) {
		return xe.line
	}
	return 0
}

// readFile parses one file; a finding for a file that cannot be read or
// parsed, so that no file is skipped silently.
func (c *checker) readFile(f ruleFile) ([]*node, bool) {
	b, err := os.ReadFile(f.path)
	if err != nil {
		c.add(f.display, 0, Error, "1226", "cannot read: %v", err)
		return nil, false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		c.add(f.display, 0, Warning, "", "empty file: nothing is loaded from it")
		return nil, false
	}
	top, err := parseXML(b)
	if err != nil {
		c.add(f.display, errLine(err), Error, "1226", "error reading XML: %v", err)
		return nil, false
	}
	return top, true
}

// internalDecoders are the decoder names analysisd registers itself
// (SetDecodeXML), usable in decoded_as.
func internalDecoders() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{"rootcheck", "syscheck_integrity_changed", "syscheck_new_entry", "syscheck_deleted",
		"syscheck_registry_key_modified", "syscheck_registry_key_added", "syscheck_registry_key_deleted",
		"syscheck_registry_value_modified", "syscheck_registry_value_added", "syscheck_registry_value_deleted",
		"hostinfo_new", "hostinfo_modified", "syscollector", "ciscat", "windows_eventchannel", "sca"} {
		m[n] = true
	}
	return m
}

func (c *checker) count(n *int) {
	if c.counting {
		*n++
	}
}
