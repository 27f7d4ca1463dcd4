package rules

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Decoder offsets.
const (
	afterParent = 1 << iota
	afterPrematch
	afterRegex
	afterError
)

// decoderOrderSize is the manager's default decoder_order_size.
const decoderOrderSize = 256

// pluginDecoders are the plugin_decoder values the manager knows.
var pluginDecoders = map[string]bool{"PF_Decoder": true, "SymantecWS_Decoder": true, "SonicWall_Decoder": true,
	"OSSECAlert_Decoder": true, "JSON_Decoder": true}

// ftsStatic are the <fts> fields that need no <order> field of that name.
var ftsStatic = map[string]bool{"dstuser": true, "user": true, "srcuser": true, "srcip": true, "dstip": true, "id": true,
	"location": true, "data": true, "extra_data": true, "system_name": true, "name": true}

func offsetOf(n *node) int {
	v, ok := n.attr("offset")
	if !ok {
		return 0
	}
	switch v {
	case "after_parent":
		return afterParent
	case "after_prematch":
		return afterPrematch
	case "after_regex":
		return afterRegex
	}
	return afterError
}

// exprType reads the type attribute; ok is false for an unknown value.
func exprType(n *node, def string) (string, bool) {
	v, present := n.attr("type")
	if !present {
		return def, true
	}
	switch t := strings.ToLower(v); t {
	case expOSRegex, expOSMatch, expPCRE2:
		return t, true
	}
	return def, false
}

// loadDecoderFile follows ReadDecodeXML and OS_AddOSDecoder
// (src/analysisd/decoders/decode-xml.c, decoders_list.c).
func (c *checker) loadDecoderFile(f ruleFile) {
	top, ok := c.readFile(f)
	if !ok {
		return
	}
	file := f.display
	if len(top) == 0 {
		if filepath.Base(f.rel) != "local_decoder.xml" || !f.checked {
			c.add(file, 1, Error, "1231", "no decoder in the file (analysisd refuses a decoders file without elements)")
		}
		return
	}
	for _, d := range top {
		if !strings.EqualFold(d.name, "decoder") {
			c.add(file, d.line, Error, "1230", "invalid element <%s>: a decoders file holds <decoder> and <var> elements", d.name)
			continue
		}
		if len(d.attrs) == 0 || !strings.EqualFold(d.attrs[0].name, "name") {
			c.add(file, d.line, Error, "1230", "<decoder> needs name as its first attribute")
			continue
		}
		if len(d.attrs) > 1 && (!strings.EqualFold(d.attrs[1].name, "status") || len(d.attrs) > 2) {
			c.add(file, d.line, Error, "1230", "<decoder name=%q>: only a status attribute may follow the name", d.attrs[0].value)
			continue
		}
		c.loadDecoder(f, d)
	}
}

type decoderDef struct {
	name, parent                string
	parentLine                  int
	regex, prematch, pname      string
	regexType, prematchType     string
	pnameType                   string
	regexLine, prematchLine     int
	pnameLine                   int
	regexOffset, prematchOffset int
	pluginOffset                int
	plugin                      bool
	order                       []string
	orderLine                   int
	hasOrder, hasFTS            bool
	ftsLine                     int
}

func (c *checker) loadDecoder(f ruleFile, d *node) {
	file := f.display
	name := d.attrs[0].value
	c.decStore[name] = true
	fail := func(line int, code, format string, args ...any) {
		c.add(file, line, Error, code, "decoder %q: "+format, append([]any{name}, args...)...)
	}
	warn := func(line int, code, format string, args ...any) {
		c.add(file, line, Warning, code, "decoder %q: "+format, append([]any{name}, args...)...)
	}
	def := decoderDef{name: name, regexType: expOSRegex, prematchType: expOSRegex, pnameType: expOSMatch}
	// addExpr adds one <regex> or <prematch> element to its pattern as analysisd does: the
	// elements join into one pattern, only the first may have an offset, the type is osregex or
	// pcre2. It reports false when the decoder cannot load.
	addExpr := func(e *node, text, typ *string, line, offset *int) bool {
		tag := strings.ToLower(e.name)
		off := offsetOf(e)
		if off&afterError != 0 {
			warn(e.line, "7601", "invalid offset %q on <%s>: analysisd uses no offset", attrOr(e, "offset"), tag)
			off = 0
		}
		if *line != 0 && off != 0 {
			fail(e.line, "2109", "only the first <%s> may have an offset", tag)
			return false
		}
		if off != 0 {
			*offset = off
		}
		t, ok := exprType(e, expOSRegex)
		if !ok || (t != expOSRegex && t != expPCRE2) {
			warn(e.line, "7601", "invalid type %q on <%s>: analysisd uses osregex", attrOr(e, "type"), tag)
			t = expOSRegex
		}
		*typ = t
		*text += e.text
		if *line == 0 {
			*line = e.line
		}
		return true
	}
	for _, e := range d.children {
		switch strings.ToLower(e.name) {
		case "parent":
			def.parent += e.text
			def.parentLine = e.line
		case "regex":
			if !addExpr(e, &def.regex, &def.regexType, &def.regexLine, &def.regexOffset) {
				return
			}
		case "prematch":
			if !addExpr(e, &def.prematch, &def.prematchType, &def.prematchLine, &def.prematchOffset) {
				return
			}
		case "program_name":
			t, ok := exprType(e, expOSMatch)
			if !ok {
				warn(e.line, "7601", "invalid type %q on <program_name>: analysisd uses osmatch", attrOr(e, "type"))
				t = expOSMatch
			}
			def.pnameType = t
			def.pname += e.text
			if def.pnameLine == 0 {
				def.pnameLine = e.line
			}
		case "ftscomment", "use_own_name", "accumulate":
		case "plugin_decoder":
			if !pluginDecoders[e.text] {
				fail(e.line, "2110", "unknown plugin_decoder %q", e.text)
				return
			}
			def.plugin = true
			def.pluginOffset = offsetOf(e)
			if def.pluginOffset&afterError != 0 {
				fail(e.line, "2107", "invalid offset %q on <plugin_decoder>", attrOr(e, "offset"))
				return
			}
		case "json_null_field":
			switch strings.ToLower(e.text) {
			case "discard", "string":
			case "empty":
				warn(e.line, "7603", "json_null_field %q is deprecated: analysisd uses the default", e.text)
			default:
				warn(e.line, "7602", "invalid json_null_field %q: analysisd uses the default", e.text)
			}
		case "json_array_structure":
			switch strings.ToLower(e.text) {
			case "csv", "array":
			default:
				warn(e.line, "7602", "invalid json_array_structure %q: analysisd uses the default", e.text)
			}
		case "type":
			if e.name != "type" {
				fail(e.line, "", "invalid element <%s>", e.name)
				return
			}
			switch e.text {
			case "firewall", "ids", "web-log", "syslog", "squid", "windows", "host-information", "ossec":
			default:
				fail(e.line, "", "invalid decoder type %q", e.text)
				return
			}
		case "order":
			if strings.Count(e.text, ",") >= decoderOrderSize {
				fail(e.line, "", "<order> has more than %d fields", decoderOrderSize)
				return
			}
			def.hasOrder, def.orderLine = true, e.line
			names, ok := fieldNames(e.text)
			if !ok {
				fail(e.line, "", "empty field name in <order>")
				return
			}
			def.order = append(def.order, names...)
		case "fts":
			def.hasFTS, def.ftsLine = true, e.line
			fts, ok := fieldNames(e.text)
			if !ok {
				fail(e.line, "", "empty field name in <fts>")
				return
			}
			for _, w := range fts {
				if ftsStatic[w] || !def.hasOrder {
					continue
				}
				found := false
				for _, o := range def.order {
					if strings.EqualFold(o, w) {
						found = true
					}
				}
				if !found {
					fail(e.line, "", "<fts> field %q is not in <order>", w)
					return
				}
			}
		default:
			fail(e.line, "", "invalid element <%s> in a decoder", e.name)
			return
		}
	}
	if def.prematchLine == 0 && def.parent == "" && def.pnameLine == 0 {
		fail(d.line, "2108", "no <prematch>, <program_name> or <parent>: analysisd cannot tell which events it decodes")
		return
	}
	if def.regexLine == 0 && (def.hasOrder || def.hasFTS) {
		line := def.orderLine
		if line == 0 {
			line = def.ftsLine
		}
		fail(line, "2107", "<order>/<fts> without a <regex>")
		return
	}
	if def.regexLine != 0 && !def.hasOrder {
		info, err := compileExpr(def.regex, def.regexType)
		if err == nil && info.known && info.captures() > 0 {
			fail(def.regexLine, "2107", "<regex> captures %d group(s) but the decoder has no <order> to name them", info.captures())
		} else {
			fail(def.regexLine, "2107", "<regex> without an <order>")
		}
		return
	}
	if def.regexOffset&afterParent != 0 && def.parent == "" {
		fail(def.regexLine, "2120", "offset after_parent on <regex> of a decoder without <parent>")
		return
	}
	if def.regexOffset&afterPrematch != 0 && def.parent != "" && def.prematchLine == 0 {
		fail(def.regexLine, "2120", "offset after_prematch on <regex> but the decoder has no <prematch>")
		return
	}
	if def.regexOffset&afterRegex != 0 && (def.parent == "" || def.regexLine == 0) {
		fail(def.regexLine, "2120", "offset after_regex needs a <parent>")
		return
	}
	if def.prematchOffset != 0 {
		if def.prematchOffset&afterParent == 0 {
			fail(def.prematchLine, "2107", "<prematch> accepts only offset after_parent")
			return
		}
		if def.parent == "" {
			fail(def.prematchLine, "2120", "offset after_parent on <prematch> of a decoder without <parent>")
			return
		}
	}
	if def.pluginOffset&afterParent != 0 && def.parent == "" {
		fail(d.line, "2120", "offset after_parent on <plugin_decoder> of a decoder without <parent>")
		return
	}
	if def.pluginOffset&afterPrematch != 0 && def.prematchLine == 0 {
		fail(d.line, "2120", "offset after_prematch on <plugin_decoder> but the decoder has no <prematch>")
		return
	}
	if def.prematchLine != 0 {
		if _, err := compileExpr(def.prematch, def.prematchType); err != nil {
			fail(def.prematchLine, "1452", "<prematch> (%s) syntax error: %v", def.prematchType, err)
			return
		}
	}
	if def.pnameLine != 0 {
		if _, err := compileExpr(def.pname, def.pnameType); err != nil {
			fail(def.pnameLine, "1452", "<program_name> (%s) syntax error: %v", def.pnameType, err)
			return
		}
	}
	if def.regexLine != 0 {
		info, err := compileExpr(def.regex, def.regexType)
		if err != nil {
			fail(def.regexLine, "1452", "<regex> (%s) syntax error: %v", def.regexType, err)
			return
		}
		// analysisd says nothing about a mismatch: only the operator's own
		// files get this finding.
		if info.known && f.checked && !f.isStock() {
			n, want := len(def.order), info.captures()
			switch {
			case n > want:
				c.add(file, def.orderLine, Warning, "", "decoder %q: <order> names %d field(s) but the <regex> captures at most %d: %s never filled", name, n, want, strings.Join(def.order[want:], ", "))
			case n < want:
				c.add(file, def.orderLine, Warning, "", "decoder %q: the <regex> captures up to %d group(s) but <order> names %d: the extra captures are dropped", name, want, n)
			}
		}
	}
	if def.plugin && (def.regexLine != 0 || def.hasOrder) {
		fail(d.line, "2111", "<plugin_decoder> together with <regex>/<order>")
		return
	}
	c.addDecoder(file, d.line, def)
}

// fieldNames splits an <order> or <fts> list as analysisd does: names
// separated by commas, blanks before a name dropped, a name ending at the
// first blank after it. ok is false when a name is empty.
func fieldNames(list string) (names []string, ok bool) {
	for _, w := range strings.Split(list, ",") {
		w = strings.TrimLeft(w, " ")
		if i := strings.IndexByte(w, ' '); i >= 0 {
			w = w[:i]
		}
		if w == "" {
			return nil, false
		}
		names = append(names, w)
	}
	return names, true
}

func attrOr(n *node, name string) string {
	v, _ := n.attr(name)
	return v
}

// addDecoder follows OS_AddOSDecoder: a child goes under every root
// decoder named like its parent; siblings of one name must each have a
// <regex> (or plugin) and no <prematch>.
func (c *checker) addDecoder(file string, line int, def decoderDef) {
	dn := &decNode{name: def.name, prematch: def.prematchLine != 0, regex: def.regexLine != 0, plugin: def.plugin, child: def.parent != "",
		at: fmt.Sprintf("%s:%d", file, line)}
	if def.parent == "" {
		if def.regexOffset&afterRegex != 0 {
			c.add(file, line, Error, "2120", "decoder %q: offset after_regex without a previous sibling", def.name)
			return
		}
		c.roots[def.name] = append(c.roots[def.name], dn)
		c.count(&c.decCount)
		return
	}
	parents := c.roots[def.parent]
	if len(parents) == 0 {
		pl := def.parentLine
		if pl == 0 {
			pl = line
		}
		switch {
		case c.decStore[def.parent]:
			c.add(file, pl, Error, "2101", "decoder %q: parent %q is not a root decoder loaded before this one (a parent must have no <parent> itself and come earlier in load order)", def.name, def.parent)
		case c.stockRead || c.rep.AsStock:
			c.add(file, pl, Error, "2101", "decoder %q: parent %q is not defined", def.name, def.parent)
		default:
			c.add(file, pl, Warning, "", "decoder %q: parent %q is not a local decoder and the stock decoders could not be read to verify it", def.name, def.parent)
			c.count(&c.decCount)
		}
		return
	}
	for _, p := range parents {
		rmf := false
		for _, s := range p.children {
			if s.name != def.name {
				continue
			}
			if (s.prematch || s.regex) && def.regexOffset != 0 {
				rmf = true
			}
			if dn.prematch {
				c.add(file, line, Error, "2102", "decoder %q: a decoder of the same name under parent %q is already loaded (%s), and same-named siblings may not have <prematch>: rename this decoder, or exclude the original file with <decoder_exclude> when this is a modified copy", def.name, def.parent, s.at)
				return
			}
			if def.hasFTS {
				c.add(file, line, Error, "2103", "decoder %q: sibling decoders of the same name may not have <fts>", def.name)
				return
			}
			if !((s.regex || s.plugin) && (dn.regex || dn.plugin)) {
				c.add(file, line, Error, "2104", "decoder %q: sibling decoders of the same name need a <regex> each", def.name)
				return
			}
		}
		if !rmf && def.regexOffset&afterRegex != 0 {
			c.add(file, line, Error, "2120", "decoder %q: offset after_regex without a previous sibling of the same name with <prematch> or <regex>", def.name)
			return
		}
		p.children = append(p.children, dn)
	}
	c.count(&c.decCount)
}
