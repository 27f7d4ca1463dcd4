package packages

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Policy is apt's view of one package (apt-cache policy).
type Policy struct {
	Package   string `json:"package"`
	Installed string `json:"installed"` // "" when not installed
	Candidate string `json:"candidate"` // "" when apt has none
	// Available are the versions some repository offers (not only the
	// dpkg status file), in apt's order: newest first.
	Available []string        `json:"available"`
	Table     []PolicyVersion `json:"table"`
}

// PolicyVersion is one row of the version table.
type PolicyVersion struct {
	Version   string         `json:"version"`
	Priority  int            `json:"priority"`
	Installed bool           `json:"installed"` // the *** row
	Sources   []PolicySource `json:"sources"`
}

// PolicySource is one place a version comes from.
type PolicySource struct {
	Priority int    `json:"priority"`
	Origin   string `json:"origin"` // "http://deb.debian.org/debian bookworm/main amd64 Packages" or ".../var/lib/dpkg/status"
}

// IsStatus reports whether the source is the dpkg status file (the
// installed package), not a repository.
func (s PolicySource) IsStatus() bool {
	return strings.HasSuffix(s.Origin, "/var/lib/dpkg/status")
}

// Has reports whether a repository offers version v.
func (p Policy) Has(v string) bool {
	for _, a := range p.Available {
		if a == v {
			return true
		}
	}
	return false
}

// ParsePolicy parses `apt-cache policy PKG...` output (one block per known
// package; unknown packages print nothing).
func ParsePolicy(out string) ([]Policy, error) {
	var (
		res     []Policy
		cur     *Policy
		inTable bool
	)
	flush := func() {
		if cur != nil {
			for _, v := range cur.Table {
				for _, s := range v.Sources {
					if !s.IsStatus() {
						cur.Available = append(cur.Available, v.Version)
						break
					}
				}
			}
			if cur.Available == nil {
				cur.Available = []string{}
			}
			if cur.Table == nil {
				cur.Table = []PolicyVersion{}
			}
			res = append(res, *cur)
		}
	}
	for n, raw := range strings.Split(out, "\n") {
		line := strings.TrimRight(raw, "\r ")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' {
			// "siem-demo:" starts a package block (also "pkg:amd64:").
			if !strings.HasSuffix(line, ":") || strings.Contains(line, " ") {
				return nil, fmt.Errorf("line %d: unexpected %q", n+1, line)
			}
			flush()
			name := strings.TrimSuffix(line, ":")
			cur, inTable = &Policy{Package: name}, false
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("line %d: %q before any package", n+1, line)
		}
		trim := strings.TrimSpace(line)
		switch {
		case !inTable && strings.HasPrefix(trim, "Installed:"):
			cur.Installed = noneEmpty(strings.TrimSpace(strings.TrimPrefix(trim, "Installed:")))
		case !inTable && strings.HasPrefix(trim, "Candidate:"):
			cur.Candidate = noneEmpty(strings.TrimSpace(strings.TrimPrefix(trim, "Candidate:")))
		case !inTable && strings.HasPrefix(trim, "Version table:"):
			inTable = true
		case !inTable:
			// "Package pin: …" and other header lines: not needed.
		default:
			if err := parseTableLine(cur, line); err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
		}
	}
	flush()
	if res == nil && strings.TrimSpace(out) != "" {
		return nil, fmt.Errorf("no package in apt-cache policy output")
	}
	return res, nil
}

// parseTableLine handles a version row (" *** 4.9.0-1 500" or
// "     4.10.0-1 500") or a source row ("        500 file:/repo ./ Packages").
func parseTableLine(cur *Policy, line string) error {
	trim := strings.TrimSpace(line)
	installed := strings.HasPrefix(trim, "***")
	if installed {
		trim = strings.TrimSpace(strings.TrimPrefix(trim, "***"))
	}
	fields := strings.Fields(trim)
	if len(fields) == 0 {
		return nil
	}
	indent := len(line) - len(strings.TrimLeft(line, " "))
	// Source rows are indented deeper (8) than version rows (5, or 1 + ***)
	// and start with a priority number.
	if !installed && indent >= 8 && len(cur.Table) > 0 {
		prio, err := strconv.Atoi(fields[0])
		if err != nil {
			return fmt.Errorf("source row %q: %w", trim, err)
		}
		origin := strings.TrimSpace(strings.TrimPrefix(trim, fields[0]))
		last := &cur.Table[len(cur.Table)-1]
		last.Sources = append(last.Sources, PolicySource{Priority: prio, Origin: origin})
		return nil
	}
	if len(fields) != 2 {
		return fmt.Errorf("version row %q", trim)
	}
	prio, err := strconv.Atoi(fields[1])
	if err != nil {
		return fmt.Errorf("version row %q: %w", trim, err)
	}
	cur.Table = append(cur.Table, PolicyVersion{Version: fields[0], Priority: prio, Installed: installed, Sources: []PolicySource{}})
	return nil
}

func noneEmpty(v string) string {
	if v == "(none)" {
		return ""
	}
	return v
}

// MadisonEntry is one line of `apt-cache madison`.
type MadisonEntry struct {
	Package string `json:"package"`
	Version string `json:"version"`
	Source  string `json:"source"`
}

// ParseMadison parses `apt-cache madison PKG` output:
// " siem-demo |   4.10.0-1 | file:/repo ./ Packages".
func ParseMadison(out string) []MadisonEntry {
	var res []MadisonEntry
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			continue
		}
		e := MadisonEntry{Package: strings.TrimSpace(f[0]), Version: strings.TrimSpace(f[1]), Source: strings.TrimSpace(f[2])}
		if e.Package == "" || e.Version == "" {
			continue
		}
		res = append(res, e)
	}
	return res
}

// ParseYumList parses `yum --showduplicates list PKG` (or dnf's) for pkg:
// rows "name.arch  version  repo" under "Installed Packages" and
// "Available Packages" (a long name may wrap the rest of its row onto the
// next line). Available is newest first (rpm order); Candidate is the
// newest available.
func ParseYumList(out, pkg string) Policy {
	p := Policy{Package: pkg, Available: []string{}}
	section := ""
	var fields []string
	flush := func() {
		for len(fields) >= 3 {
			name, ver := fields[0], fields[1]
			fields = fields[3:]
			if i := strings.LastIndexByte(name, '.'); i > 0 {
				name = name[:i] // drop .arch
			}
			if name != pkg {
				continue
			}
			switch section {
			case "installed":
				p.Installed = ver
			case "available":
				if !slices.Contains(p.Available, ver) {
					p.Available = append(p.Available, ver)
				}
			}
		}
	}
	for _, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "Installed Packages":
			flush()
			fields, section = nil, "installed"
			continue
		case t == "Available Packages":
			flush()
			fields, section = nil, "available"
			continue
		case t == "" || section == "":
			continue // metadata lines before the first section
		}
		fields = append(fields, strings.Fields(t)...)
		flush()
	}
	sort.SliceStable(p.Available, func(i, j int) bool { return CompareRPM(p.Available[i], p.Available[j]) > 0 })
	if len(p.Available) > 0 {
		p.Candidate = p.Available[0]
	}
	return p
}
