package rules

import (
	"fmt"
	"strings"
)

// The manager does not read its rules, decoders and ossec.conf with a
// standard XML parser but with its own (os_xml): several root elements, no
// entity decoding ("&lt;" stays "&lt;", a bare "&" is text), "\<" inside
// content is text, comments run from "<!" to "-->" or "!>" (so "--" inside
// a comment is fine), and an XML declaration "<?xml ...?>" is an error. This
// file follows that parser so that siemctl accepts exactly what the manager
// accepts and reports its errors with their line.

// node is one element as the manager's parser builds it.
type node struct {
	name     string
	attrs    []attr
	text     string
	line     int
	children []*node
	isVar    bool
}

type attr struct{ name, value string }

// attr returns the value of the attribute named n (exact name, as the
// manager's lookups are) and whether it is present.
func (n *node) attr(name string) (string, bool) {
	for _, a := range n.attrs {
		if a.name == name {
			return a.value, true
		}
	}
	return "", false
}

// xmlError is a parse error the manager reports as (1226) with its line.
type xmlError struct {
	line int
	msg  string
}

func (e *xmlError) Error() string { return e.msg }

type xmlReader struct {
	data  []byte
	pos   int
	line  int
	stash []int
	err   *xmlError
}

func (r *xmlReader) getc() int {
	var c int
	if n := len(r.stash); n > 0 {
		c = r.stash[n-1]
		r.stash = r.stash[:n-1]
	} else if r.pos < len(r.data) {
		c = int(r.data[r.pos])
		r.pos++
	} else {
		return -1
	}
	if c == '\n' {
		r.line++
	}
	return c
}

func (r *xmlReader) ungetc(c int) {
	if c < 0 {
		return
	}
	r.stash = append(r.stash, c)
	if c == '\n' {
		r.line--
	}
}

func (r *xmlReader) fail(format string, args ...any) {
	r.err = &xmlError{line: r.line, msg: "XMLERR: " + fmt.Sprintf(format, args...)}
}

func isSpace(c int) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// comment is called after a '<': it consumes a comment and returns 1, or
// returns 0 (nothing consumed), or -1 for a comment never closed.
func (r *xmlReader) comment() int {
	c := r.getc()
	if c != '!' {
		r.ungetc(c)
		return 0
	}
	for c = r.getc(); c != -1; c = r.getc() {
		switch c {
		case '!':
			if c = r.getc(); c == '>' {
				return 1
			}
			r.ungetc(c)
		case '-':
			if c = r.getc(); c == '-' {
				if c = r.getc(); c == '>' {
					return 1
				}
				r.ungetc(c)
			}
			r.ungetc(c)
		}
	}
	return -1
}

const (
	readOK  = 0
	readErr = -1
	readEOF = -2
)

// readElem reads elements into parent (nil: the top level). Below the top
// level it returns after one element, as the manager's parser does.
func (r *xmlReader) readElem(parent *node, depth int, top *[]*node) int {
	if depth > 1024 {
		r.fail("Max recursion level reached")
		return readErr
	}
	var elem, cont, closing []byte
	var cur *node
	location := -1
	prevv := 1
	startLine := r.line
	for {
		c := r.getc()
		if c == -1 {
			break
		}
		if c == '\\' {
			prevv *= -1
		} else if c != '<' && prevv == -1 {
			prevv = 1
		}
		if c == '<' {
			switch r.comment() {
			case -1:
				r.fail("Comment not closed.")
				return readErr
			case 1:
				continue
			}
		}
		switch {
		case location == -1 && prevv == 1:
			if c == '<' {
				startLine = r.line
				if c = r.getc(); c == '/' {
					r.fail("Element not opened.")
					return readErr
				}
				r.ungetc(c)
				location = 0
			}
		case location == 0 && (c == '>' || isSpace(c)):
			selfClosed := false
			if n := len(elem); n > 0 && elem[n-1] == '/' {
				selfClosed = true
				elem = elem[:n-1]
			}
			cur = &node{name: string(elem), line: startLine, isVar: strings.EqualFold(string(elem), "var")}
			if parent == nil {
				*top = append(*top, cur)
			} else {
				parent.children = append(parent.children, cur)
			}
			if isSpace(c) {
				ga := r.attributes(cur)
				if ga < 0 {
					return readErr
				}
				if ga == '/' {
					selfClosed = true
				}
			}
			if selfClosed {
				cur, elem, cont, closing, location = nil, nil, nil, nil, -1
				if parent != nil {
					return readOK
				}
			} else {
				cont = cont[:0]
				location = 1
			}
		case location == 2 && c == '>':
			if string(closing) != string(elem) {
				r.fail("Element '%s' not closed.", elem)
				return readErr
			}
			cur.text = string(cont)
			cur, elem, cont, closing, location = nil, nil, nil, nil, -1
			if parent != nil {
				return readOK
			}
		case location == 1 && c == '<' && prevv == 1:
			if c = r.getc(); c == '/' {
				location = 2
				closing = closing[:0]
			} else {
				r.ungetc(c)
				r.ungetc('<')
				if r.readElem(cur, depth+1, top) != readOK {
					return readErr
				}
				cont = cont[:0]
			}
		default:
			switch location {
			case 0:
				elem = append(elem, byte(c))
			case 1:
				cont = append(cont, byte(c))
			case 2:
				closing = append(closing, byte(c))
			}
			if c == '<' {
				prevv = 1
			}
		}
	}
	r.fail("End of file and some elements were not closed.")
	if location == -1 {
		return readEOF
	}
	return readErr
}

// attributes reads the attributes of n; it returns 0 after '>', '/' after
// "/>", or -1 on error.
func (r *xmlReader) attributes(n *node) int {
	location := 0
	var name, value []byte
	quote := 0
	for {
		c := r.getc()
		if c == -1 {
			break
		}
		switch {
		case c == '>' || (location == 0 && c == '/'):
			if location == 1 {
				r.fail("Attribute '%s' not closed.", name)
				return -1
			}
			if len(name) > 0 {
				r.fail("Attribute '%s' has no value.", name)
				return -1
			}
			if c == '/' {
				return '/'
			}
			return 0
		case location == 0 && c == '=':
			for _, a := range n.attrs {
				if a.name == string(name) {
					r.fail("Attribute '%s' already defined.", name)
					return -1
				}
			}
			c = r.getc()
			if c != '"' && c != '\'' {
				ok := false
				if isSpace(c) {
					for c = r.getc(); c != -1; c = r.getc() {
						if isSpace(c) {
							continue
						}
						ok = c == '"' || c == '\''
						break
					}
				}
				if !ok {
					r.fail("Attribute '%s' not followed by a \" or '.", name)
					return -1
				}
			}
			quote, location, value = c, 1, value[:0]
		case location == 0 && isSpace(c):
			if len(name) > 0 {
				r.fail("Attribute '%s' has no value.", name)
				return -1
			}
		case location == 1 && c == quote:
			n.attrs = append(n.attrs, attr{name: string(name), value: string(value)})
			c = r.getc()
			switch {
			case isSpace(c):
				return r.attributes(n)
			case c == '>':
				return 0
			case c == '/':
				return '/'
			}
			r.fail("Bad attribute closing for '%s'='%s'.", name, value)
			return -1
		case location == 0:
			name = append(name, byte(c))
		default:
			value = append(value, byte(c))
		}
	}
	r.fail("End of file while reading an attribute.")
	return -1
}

// parseXML parses a file the way the manager does and applies its <var>
// variables. Root <var> elements are not returned.
func parseXML(data []byte) ([]*node, error) {
	r := &xmlReader{data: data, line: 1}
	var top []*node
	if rc := r.readElem(nil, 0, &top); rc == readErr {
		return nil, r.err
	}
	if err := applyVariables(top); err != nil {
		return nil, err
	}
	out := top[:0]
	for _, n := range top {
		if !n.isVar {
			out = append(out, n)
		}
	}
	return out, nil
}

// applyVariables replaces $NAME by the value of <var name="NAME"> (names
// compared without case) in every element text and attribute value. A
// reference to a variable the file does not define is an error; "$(" (the
// dynamic fields of descriptions) and a "$" that does not start a name are
// text.
func applyVariables(top []*node) error {
	vars := map[string]string{}
	for _, n := range top {
		if !n.isVar {
			continue
		}
		if len(n.attrs) == 0 || !strings.EqualFold(n.attrs[0].name, "name") {
			return &xmlError{line: n.line, msg: `XML_ERR: Only "name" is allowed as an attribute for a variable`}
		}
		vars[strings.ToLower(n.attrs[0].value)] = n.text
	}
	if len(vars) == 0 {
		return nil
	}
	var walk func(n *node) error
	walk = func(n *node) error {
		var err error
		if n.text, err = substitute(n.text, vars, n.line); err != nil {
			return err
		}
		for i := range n.attrs {
			if n.attrs[i].value, err = substitute(n.attrs[i].value, vars, n.line); err != nil {
				return err
			}
		}
		for _, c := range n.children {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range top {
		if n.isVar {
			continue
		}
		if err := walk(n); err != nil {
			return err
		}
	}
	return nil
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func substitute(s string, vars map[string]string, line int) (string, error) {
	if len(s) <= 2 || !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) || !isNameByte(s[i+1]) {
			b.WriteByte(s[i])
			continue
		}
		j := i + 1
		for j < len(s) && isNameByte(s[j]) {
			j++
		}
		v, ok := vars[strings.ToLower(s[i+1:j])]
		if !ok {
			return "", &xmlError{line: line, msg: fmt.Sprintf("XML_ERR: Unknown variable: %s", s[i+1:j])}
		}
		b.WriteString(v)
		i = j - 1
	}
	return b.String(), nil
}
