package rules

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
)

// Expression types of the manager (the `type` attribute of <regex>,
// <prematch>, <match>, <field>, ...).
const (
	expOSRegex = "osregex"
	expOSMatch = "osmatch"
	expPCRE2   = "pcre2"
	expString  = "string"
)

// osPatternMaxSize is the longest pattern OS_Regex and OS_Match compile.
const osPatternMaxSize = 2048

// regexInfo is what compiling an expression tells about its captures.
type regexInfo struct {
	// alternatives holds the captures of each '|' alternative (OS_Regex),
	// or the one count of a PCRE2 pattern.
	alternatives []int
	// known is false when the count cannot be trusted (a PCRE2 construct
	// siemctl does not model).
	known bool
}

// captures is what fills <order>: each OS_Regex alternative fills it from
// its own groups, so the widest alternative counts, not the sum.
func (r regexInfo) captures() int {
	m := 0
	for _, n := range r.alternatives {
		m = max(m, n)
	}
	return m
}

// compileExpr validates pattern as the manager's expression compiler does
// for the given type.
func compileExpr(pattern, typ string) (regexInfo, error) {
	switch typ {
	case expOSRegex:
		return compileOSRegex(pattern)
	case expPCRE2:
		return compilePCRE2(pattern)
	case expOSMatch:
		if len(pattern) > osPatternMaxSize {
			return regexInfo{}, fmt.Errorf("pattern longer than %d characters", osPatternMaxSize)
		}
	}
	return regexInfo{known: true}, nil
}

// compileOSRegex follows OSRegex_Compile (src/os_regex/os_regex_compile.c):
// only the escapes \d \w \s \p \( \) \\ \D \W \S \. \t \$ \| \< exist; one
// level of parentheses; '|' separates alternatives and may not appear
// inside parentheses.
func compileOSRegex(p string) (regexInfo, error) {
	if len(p) > osPatternMaxSize {
		return regexInfo{}, fmt.Errorf("pattern longer than %d characters", osPatternMaxSize)
	}
	info := regexInfo{known: true, alternatives: []int{0}}
	depth := 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 >= len(p) {
				return regexInfo{}, errors.New(`"\" at the end of the pattern`)
			}
			i++
			if !strings.ContainsRune(`dwsp()\DWS.t$|<`, rune(p[i])) {
				return regexInfo{}, fmt.Errorf(`invalid escape "\%c" (OS_Regex knows \d \w \s \p \t \. \( \) \\ \D \W \S \$ \| \<)`, p[i])
			}
		case '(':
			depth++
			if depth > 1 {
				return regexInfo{}, errors.New("nested parentheses (OS_Regex allows one level)")
			}
			info.alternatives[len(info.alternatives)-1]++
		case ')':
			depth--
			if depth < 0 {
				return regexInfo{}, errors.New("')' without '('")
			}
		case '|':
			if depth != 0 {
				return regexInfo{}, errors.New("'|' inside parentheses (each alternative must be a whole pattern)")
			}
			info.alternatives = append(info.alternatives, 0)
		}
	}
	if depth != 0 {
		return regexInfo{}, errors.New("'(' without ')'")
	}
	return info, nil
}

// compilePCRE2 validates a PCRE2 pattern. Go's regexp syntax is a subset of
// PCRE2: what Go parses is valid PCRE2; of Go's errors only those that are
// errors in PCRE2 too are reported, and constructs Go lacks (lookarounds,
// atomic groups, possessive quantifiers, backreferences, ...) are accepted
// with a conservative check of brackets and parentheses.
func compilePCRE2(p string) (regexInfo, error) {
	if strings.Contains(p, "(?&lt;") || strings.Contains(p, "(?P&lt;") {
		// The manager's XML parser does not decode entities: PCRE2 reads
		// "(?&lt;" as a call of a group named "lt", which fails.
		return regexInfo{}, errors.New(`"&lt;" is not decoded by the manager's XML parser, so PCRE2 reads "(?&lt;" as a call of a group named lt: name groups with (?'name'...)`)
	}
	if strings.Contains(p, "(*") {
		// Verbs such as (*UTF) Go reads as a repetition without argument.
		n, known, err := scanPCRE2(p)
		return regexInfo{known: known, alternatives: []int{n}}, err
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err == nil {
		return regexInfo{known: true, alternatives: []int{re.MaxCap()}}, nil
	}
	var se *syntax.Error
	if errors.As(err, &se) {
		switch se.Code {
		case syntax.ErrMissingParen, syntax.ErrUnexpectedParen, syntax.ErrMissingBracket,
			syntax.ErrTrailingBackslash, syntax.ErrMissingRepeatArgument:
			return regexInfo{}, fmt.Errorf("%s: `%s`", se.Code, se.Expr)
		}
	}
	n, known, serr := scanPCRE2(p)
	if serr != nil {
		return regexInfo{}, serr
	}
	return regexInfo{known: known, alternatives: []int{n}}, nil
}

// scanPCRE2 counts the capture groups of a PCRE2 pattern Go cannot parse
// and checks its brackets and parentheses balance.
func scanPCRE2(expr string) (int, bool, error) {
	n, depth := 0, 0
	known := !strings.Contains(expr, "(?|")
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '\\':
			if i+1 >= len(expr) {
				return 0, false, errors.New(`"\" at the end of the pattern`)
			}
			if expr[i+1] == 'Q' {
				end := strings.Index(expr[i+2:], `\E`)
				if end < 0 {
					return n, known, nil
				}
				i += end + 3
				continue
			}
			i++
		case c == '[':
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
				} else if expr[j] == '[' && j+1 < len(expr) && expr[j+1] == ':' {
					if end := strings.Index(expr[j:], ":]"); end > 0 {
						j += end + 1
					}
				}
				j++
			}
			if j >= len(expr) {
				return 0, false, errors.New("missing terminating ] for character class")
			}
			i = j
		case c == '(':
			depth++
			rest := expr[i+1:]
			switch {
			case strings.HasPrefix(rest, "?#"):
				end := strings.IndexByte(rest, ')')
				if end < 0 {
					return 0, false, errors.New("missing ) after (?# comment")
				}
				depth--
				i += end + 1
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
				return 0, false, errors.New("unmatched closing parenthesis")
			}
		}
	}
	if depth != 0 {
		return 0, false, errors.New("missing closing parenthesis")
	}
	return n, known, nil
}
