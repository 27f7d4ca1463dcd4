package manager

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// errQueryFormat, errQueryField and errQueryOperator map to API errors 1407, 1408 and 1409.
var (
	errQueryFormat   = errors.New("query does not match expected format")
	errQueryField    = errors.New("field does not exist")
	errQueryOperator = errors.New("invalid query operator")
)

// qNode is a parsed `q` expression: ';' is AND, ',' is OR (AND binds tighter), parentheses group.
type qNode struct {
	op       string // "and", "or", "cmp"
	children []*qNode
	field    string
	cmp      string // = != < > ~
	value    string
}

// queryParam parses a request's q over the fields valid accepts, or answers the API's 400 for it (1408 an
// unknown field, 1409 an unknown operator, 1407 any other malformed query) and returns false.
func queryParam(w http.ResponseWriter, q string, valid func(string) bool) (*qNode, bool) {
	n, err := parseQueryFields(q, valid)
	switch {
	case errors.Is(err, errQueryField):
		writeWazuhError(w, 400, 1408, strings.TrimPrefix(err.Error(), errQueryField.Error()+": "))
		return nil, false
	case errors.Is(err, errQueryOperator):
		writeWazuhError(w, 400, 1409, strings.TrimPrefix(err.Error(), errQueryOperator.Error()+": "))
		return nil, false
	case err != nil:
		writeWazuhError(w, 400, 1407, "")
		return nil, false
	}
	return n, true
}

// parseQueryFields parses a query whose fields valid accepts.
func parseQueryFields(q string, valid func(string) bool) (*qNode, error) {
	p := &qParser{s: q, valid: valid}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.s) {
		return nil, fmt.Errorf("%w: unexpected %q", errQueryFormat, p.s[p.i:])
	}
	return n, nil
}

type qParser struct {
	s     string
	i     int
	valid func(string) bool
}

var reQueryField = regexp.MustCompile(`^[\w.]+$`)

func (p *qParser) or() (*qNode, error) { return p.list(',', "or", p.and) }

func (p *qParser) and() (*qNode, error) { return p.list(';', "and", p.factor) }

// list parses next (sep next)* into one op node, or the single operand.
func (p *qParser) list(sep byte, op string, next func() (*qNode, error)) (*qNode, error) {
	n, err := next()
	if err != nil {
		return nil, err
	}
	out := &qNode{op: op, children: []*qNode{n}}
	for p.i < len(p.s) && p.s[p.i] == sep {
		p.i++
		m, err := next()
		if err != nil {
			return nil, err
		}
		out.children = append(out.children, m)
	}
	if len(out.children) == 1 {
		return n, nil
	}
	return out, nil
}

func (p *qParser) factor() (*qNode, error) {
	if p.i < len(p.s) && p.s[p.i] == '(' {
		p.i++
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return nil, fmt.Errorf("%w: missing ')'", errQueryFormat)
		}
		p.i++
		return n, nil
	}
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("=!<>~;,()", p.s[p.i]) < 0 {
		p.i++
	}
	field := p.s[start:p.i]
	if field == "" || p.i >= len(p.s) {
		return nil, fmt.Errorf("%w: missing operator", errQueryFormat)
	}
	var op string
	switch {
	case strings.HasPrefix(p.s[p.i:], "!="):
		op = "!="
	case strings.IndexByte("=<>~", p.s[p.i]) >= 0:
		op = p.s[p.i : p.i+1]
	default:
		return nil, fmt.Errorf("%w: bad operator", errQueryFormat)
	}
	p.i += len(op)
	vs := p.i
	for p.i < len(p.s) && strings.IndexByte(";,()", p.s[p.i]) < 0 {
		p.i++
	}
	value := p.s[vs:p.i]
	if value == "" {
		return nil, fmt.Errorf("%w: missing value", errQueryFormat)
	}
	if !reQueryField.MatchString(field) {
		return nil, fmt.Errorf("%w: field %q", errQueryFormat, field)
	}
	if !p.valid(field) {
		return nil, fmt.Errorf("%w: %s", errQueryField, field)
	}
	if field == "group" && (op == "<" || op == ">") {
		return nil, fmt.Errorf("%w: %s", errQueryOperator, op)
	}
	return &qNode{op: "cmp", field: field, cmp: op, value: value}, nil
}

func (n *qNode) match(c *viewCtx, a *Agent) bool {
	switch n.op {
	case "and":
		for _, ch := range n.children {
			if !ch.match(c, a) {
				return false
			}
		}
		return true
	case "or":
		for _, ch := range n.children {
			if ch.match(c, a) {
				return true
			}
		}
		return false
	}
	v := c.field(a, n.field)
	want := n.value
	if n.field == "group" {
		// The groups column is a list: = and != test membership, ~ a substring of any group; an agent
		// without groups (NULL in global.db) matches nothing.
		if len(a.Group) == 0 {
			return false
		}
		switch n.cmp {
		case "=":
			return slices.Contains(a.Group, want)
		case "!=":
			return !slices.Contains(a.Group, want)
		case "~":
			return slices.ContainsFunc(a.Group, func(g string) bool { return strings.Contains(strings.ToLower(g), strings.ToLower(want)) })
		}
		return false
	}
	if n.field == "lastKeepAlive" || n.field == "dateAdd" {
		// An absolute date compares timestamps (a NULL keepalive matches nothing).
		if at, ok := parseQueryDate(want); ok {
			t := a.DateAdd
			if n.field == "lastKeepAlive" {
				t = c.lastKeepAlive(a)
			}
			if t == 0 {
				return false
			}
			switch n.cmp {
			case ">":
				return t > at
			case "<":
				return t < at
			case "=":
				return t == at
			case "!=":
				return t != at
			}
			return false
		}
		// A timeframe compares ages: lastKeepAlive>10m means "older than 10 minutes".
		if d, err := parseTimeframe(want); err == nil {
			t := a.DateAdd
			if n.field == "lastKeepAlive" {
				t = c.lastKeepAlive(a)
			}
			age := c.now.Sub(time.Unix(t, 0))
			switch n.cmp {
			case ">":
				return t != 0 && age > d
			case "<":
				return t != 0 && age < d
			}
		}
	}
	if n.field == "id" { // ids compare as numbers: id!=2 excludes 002
		if wi, err := strconv.Atoi(want); err == nil {
			v, want = strconv.Itoa(a.ID), strconv.Itoa(wi)
		}
	}
	switch n.cmp {
	case "=":
		return v == want
	case "!=":
		return v != want
	case "~":
		return strings.Contains(strings.ToLower(v), strings.ToLower(want))
	case "<", ">":
		cmp := compareValues(v, want)
		if n.cmp == "<" {
			return cmp < 0
		}
		return cmp > 0
	}
	return false
}

// parseQueryDate reads the absolute dates the query language accepts ("2021-07-03", "2021-07-03 00:00:00",
// "2021-07-03T00:00:00"), in UTC.
func parseQueryDate(v string) (int64, bool) {
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02T15:04:05Z", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.Unix(), true
		}
	}
	return 0, false
}

func compareValues(a, b string) int {
	ai, errA := strconv.ParseFloat(a, 64)
	bi, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		switch {
		case ai < bi:
			return -1
		case ai > bi:
			return 1
		}
		return 0
	}
	if strings.HasPrefix(a, "Wazuh v") || strings.HasPrefix(b, "v") {
		return compareVersions(a, b)
	}
	return strings.Compare(a, b)
}

// matchValues evaluates the query over plain field values (the users' fields).
func (n *qNode) matchValues(get func(field string) string) bool {
	switch n.op {
	case "and":
		for _, ch := range n.children {
			if !ch.matchValues(get) {
				return false
			}
		}
		return true
	case "or":
		for _, ch := range n.children {
			if ch.matchValues(get) {
				return true
			}
		}
		return false
	}
	v := get(n.field)
	switch n.cmp {
	case "=":
		return compareValues(v, n.value) == 0
	case "!=":
		return compareValues(v, n.value) != 0
	case "~":
		return strings.Contains(strings.ToLower(v), strings.ToLower(n.value))
	case "<":
		return compareValues(v, n.value) < 0
	case ">":
		return compareValues(v, n.value) > 0
	}
	return false
}
