package rules

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// ruleOptions are the elements a <rule> may hold, with the default
// expression type of those that are patterns ("" = not a pattern).
var ruleOptions = map[string]string{
	"regex": expOSRegex, "match": expOSMatch, "decoded_as": "", "category": "", "cve": "", "info": "", "time": "",
	"weekday": "", "description": "", "ignore": "", "check_if_ignored": "", "srcip": "", "srcgeoip": expOSMatch,
	"srcport": expOSMatch, "dstip": "", "dstgeoip": expOSMatch, "dstport": expOSMatch, "user": expOSMatch,
	"url": expOSMatch, "id": expOSMatch, "data": expOSMatch, "extra_data": expOSMatch, "hostname": expOSMatch,
	"program_name": expOSMatch, "status": expOSMatch, "protocol": expOSMatch, "system_name": expOSMatch,
	"action": expString, "compiled_rule": "", "field": expOSRegex, "location": expOSMatch, "list": "",
	"if_sid": "", "if_group": "", "if_level": "", "if_fts": "", "if_matched_regex": "", "if_matched_group": "",
	"if_matched_sid": "", "check_diff": "", "options": "", "mitre": "", "group": "",
}

// contextOptions need an if_matched_* (or check_diff) context.
func contextOption(name string) bool {
	return strings.HasPrefix(name, "same_") || strings.HasPrefix(name, "different_") ||
		strings.HasPrefix(name, "not_same_") || name == "global_frequency"
}

var ruleAttrs = map[string]bool{"id": true, "level": true, "maxsize": true, "timeframe": true, "frequency": true,
	"accuracy": true, "noalert": true, "ignore": true, "overwrite": true}

var ifSIDSyntax = regexp.MustCompile(`^[0-9, ]+$`)

// loadRuleFile follows Rules_OP_ReadRules and OS_AddChild
// (src/analysisd/rules.c, rules_list.c).
func (c *checker) loadRuleFile(f ruleFile) {
	top, ok := c.readFile(f)
	if !ok {
		return
	}
	file := f.display
	if len(top) == 0 {
		c.add(file, 1, Error, "1202", "no <group> in the file")
		return
	}
	for _, g := range top {
		if !strings.EqualFold(g.name, "group") {
			c.add(file, g.line, Error, "", "invalid root element <%s>: a rules file holds <group> and <var> elements", g.name)
			continue
		}
		if len(g.attrs) != 1 || !strings.EqualFold(g.attrs[0].name, "name") {
			c.add(file, g.line, Error, "", "<group> needs exactly one attribute, name")
			continue
		}
		if len(g.children) == 0 {
			c.add(file, g.line, Error, "", "group %q without any rule", g.attrs[0].value)
			continue
		}
		for _, r := range g.children {
			if !strings.EqualFold(r.name, "rule") {
				c.add(file, r.line, Error, "", "invalid element <%s> in <group>: only <rule> is allowed", r.name)
				continue
			}
			c.loadRule(f, g.attrs[0].value, r)
		}
	}
}

type pattern struct {
	text, typ string
	line      int
}

func (c *checker) loadRule(f ruleFile, group string, r *node) {
	file := f.display
	id, level, overwrite, frequency := -1, -1, false, false
	for _, a := range r.attrs {
		if !ruleAttrs[a.name] {
			c.add(file, r.line, Error, "", "invalid attribute %q on <rule>", a.name)
			return
		}
		v := strings.TrimSpace(a.value)
		switch a.name {
		case "id":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > MaxRuleID {
				c.add(file, r.line, Error, "", "rule id %q is not a number between 0 and %d", a.value, MaxRuleID)
				return
			}
			id = n
		case "level":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 16 {
				c.add(file, r.line, Error, "", "level %q is not a number between 0 and 16", a.value)
				return
			}
			level = n
		case "overwrite":
			overwrite = v == "yes"
		case "frequency":
			frequency = true
		}
	}
	if id == -1 || level == -1 {
		c.add(file, r.line, Error, "", "<rule> needs an id and a level")
		return
	}
	askedOverwrite := overwrite
	verified := c.stockRead || c.rep.AsStock
	if prev, dup := c.loaded[id]; dup {
		if !overwrite {
			where := "at " + prev.file + ":" + strconv.Itoa(prev.line)
			if prev.stock && !f.isStock() {
				where = "by the stock ruleset " + where
			}
			c.add(file, r.line, Warning, "7612", "rule id %d is already defined %s: analysisd ignores this rule (use overwrite=\"yes\" to replace it, or a free id)", id, where)
			return
		}
	} else if overwrite && !verified {
		// Overwrites a stock rule the check could not read.
		overwrite = false
	} else if overwrite {
		c.add(file, r.line, Warning, "7613", "rule %d has overwrite=\"yes\" but no rule %d exists: it is loaded as a new rule", id, id)
		overwrite = false
	}
	if f.checked && !f.isStock() && !askedOverwrite && id < MinLocalID && id >= 10 {
		c.add(file, r.line, Warning, "", "rule id %d is in the range of Wazuh's own rules (local rules use %d and up): a ruleset update may take it", id, MinLocalID)
	}

	fail := func(line int, code, format string, args ...any) {
		c.add(file, line, Error, code, "rule %d: "+format, append([]any{id}, args...)...)
	}
	warn := func(line int, code, format string, args ...any) {
		c.add(file, line, Warning, code, "rule %d: "+format, append([]any{id}, args...)...)
	}
	if len(r.children) == 0 {
		fail(r.line, "", "no options: analysisd refuses a rule without any")
		return
	}
	var ifSID, ifMatchedSID, ifGroup, ifMatchedGroup string
	var ifSIDLine int
	hasDesc, context, ctxOpts := false, false, frequency
	groups := group
	pats := map[string]*pattern{}
	var fields []pattern
	for _, e := range r.children {
		name := strings.ToLower(e.name)
		defType, known := ruleOptions[name]
		if !known && !contextOption(name) {
			fail(e.line, "", "invalid option <%s>", e.name)
			return
		}
		if contextOption(name) {
			ctxOpts = true
			continue
		}
		if v, ok := e.attr("negate"); ok && v != "yes" && v != "no" {
			warn(e.line, "7600", "invalid negate=%q on <%s>: analysisd uses no", v, e.name)
		}
		if defType != "" {
			t, ok := exprType(e, defType)
			if !ok {
				warn(e.line, "7600", "invalid type=%q on <%s>: analysisd uses %s", attrOr(e, "type"), e.name, defType)
			}
			if name == "field" {
				if fn, ok := e.attr("name"); !ok || strings.TrimSpace(fn) == "" {
					fail(e.line, "", "<field> without a name")
					return
				}
				fields = append(fields, pattern{text: e.text, typ: t, line: e.line})
				continue
			}
			p := pats[name]
			if p == nil {
				p = &pattern{line: e.line}
				pats[name] = p
			}
			p.text += e.text
			p.typ = t
			continue
		}
		switch name {
		case "description":
			hasDesc = true
		case "group":
			groups += e.text
		case "decoded_as":
			if !c.decStore[e.text] {
				if c.stockRead || c.rep.AsStock {
					fail(e.line, "", "decoded_as %q: no decoder of that name", e.text)
					return
				}
				warn(e.line, "", "decoded_as %q is not a local decoder and the stock decoders could not be read to verify it", e.text)
			}
		case "srcip", "dstip":
			if !validIPs(e.text) {
				fail(e.line, "1237", "invalid IP address %q in <%s>", e.text, e.name)
				return
			}
		case "if_sid":
			ifSID, ifSIDLine = e.text, e.line
		case "if_matched_sid":
			ifMatchedSID = strings.TrimSpace(e.text)
			if ifSIDLine == 0 {
				ifSIDLine = e.line
			}
			context = true
		case "if_group":
			ifGroup = e.text
		case "if_matched_group":
			ifMatchedGroup = e.text
			context = true
		case "if_matched_regex":
			context = true
			if _, err := compileOSRegex(e.text); err != nil {
				fail(e.line, "1450", "<if_matched_regex> syntax error: %v", err)
				return
			}
		case "check_diff":
			context = true
		}
	}
	if ifMatchedSID != "" {
		if n, err := strconv.Atoi(ifMatchedSID); err != nil || n <= 0 {
			warn(ifSIDLine, "7615", "invalid <if_matched_sid> %q: analysisd ignores this rule", ifMatchedSID)
			return
		}
	}
	if ifSID != "" && !ifSIDSyntax.MatchString(ifSID) {
		warn(ifSIDLine, "7618", "invalid <if_sid> %q (rule ids separated by commas or spaces): analysisd ignores this rule", ifSID)
		return
	}
	if !hasDesc {
		fail(r.line, "", "no <description>: analysisd refuses the rule")
		return
	}
	if ctxOpts && !context {
		fail(r.line, "", "frequency or same_*/different_* options without if_matched_sid, if_matched_group or if_matched_regex")
		return
	}
	for name, p := range pats {
		if _, err := compileExpr(p.text, p.typ); err != nil {
			fail(p.line, "5107", "<%s> (%s) syntax error: %v", name, p.typ, err)
			return
		}
	}
	for _, p := range fields {
		if _, err := compileExpr(p.text, p.typ); err != nil {
			fail(p.line, "5107", "<field> (%s) syntax error: %v", p.typ, err)
			return
		}
	}

	info := &ruleInfo{id: id, file: file, line: r.line, ifSID: ifSID, groups: groups, stock: !f.checked || f.isStock()}
	if overwrite {
		prev := c.loaded[id]
		if ifSID != "" && ifMatchedSID == "" && strings.TrimSpace(prev.ifSID) != strings.TrimSpace(ifSID) {
			warn(ifSIDLine, "7605", "overwrite cannot change <if_sid> (%q in the original): the original value is kept", prev.ifSID)
		}
		info.ifSID = prev.ifSID
		c.loaded[id] = info
		return
	}
	if ifMatchedSID != "" && ifSID == "" && ifGroup == "" {
		ifSID = ifMatchedSID
	}
	if ifMatchedGroup != "" && ifSID == "" && ifGroup == "" {
		ifGroup = ifMatchedGroup
	}
	if id >= 10 {
		switch {
		case ifSID != "":
			added := false
			for _, s := range strings.FieldsFunc(ifSID, func(r rune) bool { return r == ',' || r == ' ' }) {
				sid, _ := strconv.Atoi(s)
				if c.loaded[sid] != nil {
					// Once under one parent the rule is in the tree: a later
					// id in the list may be the rule itself (stock 91821).
					added = true
					c.loaded[id] = info
					continue
				}
				if !c.stockRead && !c.rep.AsStock {
					// May be a stock rule the check could not read.
					added = true
					continue
				}
				if ifMatchedSID != "" {
					warn(ifSIDLine, "7620", "<if_matched_sid> %d: no such rule loaded before this one: analysisd ignores this rule", sid)
					return
				}
				warn(ifSIDLine, "7617", "<if_sid> %d: no such rule loaded before this one: analysisd ignores this parent", sid)
			}
			if !added {
				warn(ifSIDLine, "7619", "none of the <if_sid> rules exists: analysisd ignores this rule")
				return
			}
		case ifGroup != "":
			if (c.stockRead || c.rep.AsStock) && !c.groupLoaded(ifGroup) {
				warn(r.line, "7610", "no rule loaded before this one is in group %q: analysisd ignores this rule", ifGroup)
				return
			}
		}
	}
	c.loaded[id] = info
	c.count(&c.ruleCount)
}

func (f ruleFile) isStock() bool { return strings.HasPrefix(f.rel, "ruleset/") }

// groupLoaded reports whether a loaded rule's groups match the if_group
// pattern (an OS_Match: alternatives separated by '|').
func (c *checker) groupLoaded(pat string) bool {
	for _, alt := range strings.Split(pat, "|") {
		alt = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(alt, "^"), "$"))
		if alt == "" {
			return true
		}
		for _, r := range c.loaded {
			if strings.Contains(strings.ToLower(r.groups), alt) {
				return true
			}
		}
	}
	return false
}

// validIPs accepts what the manager's OS_IsValidIP does for <srcip>/<dstip>:
// an address, optionally negated with '!', with a /prefix or /netmask,
// several separated by commas.
func validIPs(s string) bool {
	for _, ip := range strings.Split(s, ",") {
		ip = strings.TrimPrefix(strings.TrimSpace(ip), "!")
		if ip == "any" {
			continue
		}
		addr, mask, hasMask := strings.Cut(ip, "/")
		if _, err := netip.ParseAddr(addr); err != nil {
			return false
		}
		if hasMask {
			if n, err := strconv.Atoi(mask); err == nil {
				if n < 0 || n > 128 {
					return false
				}
			} else if _, err := netip.ParseAddr(mask); err != nil {
				return false
			}
		}
	}
	return true
}
