// Package redact removes secrets from text where they can appear: values of
// credential fields (JSON, YAML, key=value, query strings), Authorization
// headers (Basic, Bearer, …), URL user info, and the resolved secrets
// themselves (and their URL, JSON, Go-quoted and base64 forms). A secret
// that is a plain word is replaced only where it stands as a whole token:
// with the password "wazuh", "/etc/wazuh-indexer", "wazuh.yml" and
// "siemctl" (password "siem") stay as they are. A secret that cannot be
// part of ordinary text (12 characters or more, or 8 or more of at least
// three classes: lower, upper, digit, other) is removed wherever it
// appears, even glued into a longer name by a server that echoes it.
//
// One Redactor serves the process: the CLI wraps stdout, stderr and the
// logger with it, and journals and snapshots pass their text through it.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mark replaces every redacted value.
const Mark = "[redacted]"

// secretWord ends a key whose value is a credential: it must be followed by
// the separator, so password_file and password_env (paths and names) are
// kept.
const secretWord = `(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|credentials?|private[_-]?key|cookie)`

var (
	// SecretKeyRE reports whether a (whole) key names a credential.
	SecretKeyRE = regexp.MustCompile(`(?i)^(?:[A-Za-z0-9_.-]*` + secretWord + `|authorization)$`)

	authRE  = regexp.MustCompile(`(?i)((?:proxy-)?authorization"?\s*[:=]\s*"?)((?:basic|bearer|digest|negotiate|token)\s+)?([^\s",;]+)`)
	fieldRE = regexp.MustCompile(`(?i)(` + secretWord + `)(\\?"?\s*[:=]\s*)(\\"(?:[^\\]|\\[^"])*\\"|"(?:[^"\\]|\\.)*"|'[^']*'|[^\s,;&}\]"'\\]+)`)
	// userRE finds the user info of anything shaped like a URL, parsable or
	// not (a bad escape elsewhere must not print the password).
	userRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s"'@]*)@`)
)

// Redactor holds the resolved secrets of the process. The zero value and
// nil redact structure only (headers, fields, URL user info).
type Redactor struct {
	mu    sync.RWMutex
	forms []form // longest first
}

type form struct {
	s        string
	anywhere bool // a strong secret: replaced even inside a longer word
}

// strong reports whether s cannot be part of ordinary text.
func strong(s string) bool {
	if len(s) >= 12 {
		return true
	}
	if len(s) < 8 {
		return false
	}
	var lower, upper, digit, other int
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z':
			lower = 1
		case c >= 'A' && c <= 'Z':
			upper = 1
		case c >= '0' && c <= '9':
			digit = 1
		default:
			other = 1
		}
	}
	return lower+upper+digit+other >= 3
}

// New returns a Redactor that knows secrets.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add registers secrets (as they are resolved).
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, f := range r.forms {
		seen[f.s] = true
	}
	var anywhere bool
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			r.forms = append(r.forms, form{s: s, anywhere: anywhere})
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		anywhere = strong(s)
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		if b, err := json.Marshal(s); err == nil {
			add(strings.Trim(string(b), `"`))
		}
		add(strings.Trim(strconv.Quote(s), `"`))
		add(base64.StdEncoding.EncodeToString([]byte(s)))
		add(base64.RawStdEncoding.EncodeToString([]byte(s)))
	}
	sort.SliceStable(r.forms, func(i, j int) bool { return len(r.forms[i].s) > len(r.forms[j].s) })
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	s = structural(s)
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, f := range r.forms {
		if f.anywhere {
			s = strings.ReplaceAll(s, f.s, Mark)
		} else {
			s = replaceTokens(s, f.s)
		}
	}
	return s
}

// structural redacts URL user info, Authorization headers and credential
// fields. The regular expressions run only on the lines that hold a cheap
// hint of them (most output holds none).
func structural(s string) string {
	lower := asciiLower(s)
	if !strings.Contains(lower, "://") && !strings.Contains(lower, "authorization") && !hasSecretWord(lower) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		n := strings.IndexByte(s, '\n') + 1
		if n == 0 {
			n = len(s)
		}
		line, low := s[:n], lower[:n]
		s, lower = s[n:], lower[n:]
		if strings.Contains(low, "://") && strings.Contains(low, "@") {
			line = userRE.ReplaceAllStringFunc(line, func(m string) string {
				g := userRE.FindStringSubmatch(m)
				user, _, hasPass := strings.Cut(g[2], ":")
				if !hasPass {
					return m // a user name alone is no secret
				}
				return g[1] + user + ":" + Mark + "@"
			})
		}
		if strings.Contains(low, "authorization") {
			line = authRE.ReplaceAllString(line, "${1}${2}"+Mark)
		}
		if hasSecretWord(low) {
			line = fieldRE.ReplaceAllStringFunc(line, redactField)
		}
		b.WriteString(line)
	}
	return b.String()
}

var secretHints = []string{"passw", "passphrase", "secret", "token", "apikey", "api_key", "api-key", "credential", "privatekey", "private_key", "private-key", "cookie"}

func hasSecretWord(lower string) bool {
	for _, h := range secretHints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// asciiLower lowers ASCII letters only, so byte offsets stay the same.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func redactField(m string) string {
	g := fieldRE.FindStringSubmatch(m)
	if strings.HasPrefix(strings.TrimLeft(g[3], `\"'`), Mark[:len(Mark)-1]) {
		return m
	}
	if q := g[3][0]; (strings.HasPrefix(g[2], `"`) || strings.HasPrefix(g[2], `\"`)) && q != '"' && q != '\\' {
		return m // a JSON literal (number, true, null) under a quoted key: no secret, and JSON stays valid
	}
	v := Mark
	switch {
	case strings.HasPrefix(g[3], `\"`):
		v = `\"` + Mark + `\"`
	case g[3][0] == '"' || g[3][0] == '\'':
		v = string(g[3][0]) + Mark + string(g[3][0])
	}
	return g[1] + g[2] + v
}

// replaceTokens replaces f where it stands as a whole token: not preceded or
// followed by a character of a word, a path or a file name.
func replaceTokens(s, f string) string {
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(s[i:], f)
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len(f)
		if tokenStart(s, start) && tokenEnd(s, end) {
			b.WriteString(s[i:start])
			b.WriteString(Mark)
		} else {
			b.WriteString(s[i : start+1])
			end = start + 1
		}
		i = end
	}
	if i == 0 {
		return s
	}
	b.WriteString(s[i:])
	return b.String()
}

// wordByte are the bytes that continue a word, a path or a file name.
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '/' || c == '.' || c == '~' || c >= 0x80
}

func tokenStart(s string, i int) bool { return i == 0 || !wordByte(s[i-1]) }

func tokenEnd(s string, i int) bool {
	if i == len(s) || !wordByte(s[i]) {
		return true
	}
	// Sentence punctuation ends a token ("… password wazuh."), a file
	// name's dot does not ("wazuh.yml").
	return s[i] == '.' && (i+1 == len(s) || !wordByte(s[i+1]))
}

// URL returns raw without the password of its user info, whether or not
// it parses.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return (*Redactor)(nil).String(raw)
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), Mark)
		return strings.Replace(u.String(), url.QueryEscape(Mark), Mark, 1)
	}
	return raw
}

// Value redacts a structured value: anything under a credential key is
// replaced whole; every other string is redacted as text.
func (r *Redactor) Value(key string, v any) any {
	if key != "" && SecretKeyRE.MatchString(key) {
		return Mark
	}
	switch t := v.(type) {
	case string:
		return r.String(t)
	case map[string]any:
		return r.Map(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = r.Value("", e)
		}
		return out
	default:
		return v
	}
}

// Map returns a redacted copy of m (see Value).
func (r *Redactor) Map(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = r.Value(k, v)
	}
	return out
}

// Writer returns w with every write redacted. Each Write is redacted on
// its own: callers write whole lines (fmt.Fprintln, tables, slog records).
func (r *Redactor) Writer(w io.Writer) io.Writer { return &writer{r: r, w: w} }

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	out := w.r.String(string(p))
	if _, err := io.WriteString(w.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap returns the underlying writer (for terminal detection).
func (w *writer) Unwrap() io.Writer { return w.w }
