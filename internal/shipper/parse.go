package shipper

import (
	"strings"
)

// Step results as the shipper prints them.
const (
	StatusOK    = "OK"
	StatusError = "ERROR"
	StatusWarn  = "WARN"
)

// Step is one "name... RESULT [detail]" line of `test output`.
type Step struct {
	Group  string `json:"group,omitempty"` // enclosing step ("connection", "TLS"), "" at top level
	Name   string `json:"name"`            // "parse url", "dial up", "handshake", "talk to server"
	Status string `json:"status"`          // OK | ERROR | WARN
	Detail string `json:"detail,omitempty"`
}

// OK reports a step that passed (WARN passes: e.g. TLS disabled).
func (s Step) OK() bool { return s.Status == StatusOK || s.Status == StatusWarn }

// HostReport is one output host's block of `test output`.
type HostReport struct {
	Output     string            `json:"output"` // "elasticsearch"
	URL        string            `json:"url"`
	Steps      []Step            `json:"steps"`
	Info       map[string]string `json:"info"` // "addresses", "security", ...
	TLSVersion string            `json:"tls_version,omitempty"`
	Version    string            `json:"version,omitempty"` // the server's version ("7.10.2" on OpenSearch with the compatibility override)
	OK         bool              `json:"ok"`
}

// FirstError is the first failed step, or nil.
func (h HostReport) FirstError() *Step {
	for i := range h.Steps {
		if !h.Steps[i].OK() {
			return &h.Steps[i]
		}
	}
	return nil
}

// Refusal is an output host that answered and refused the shipper's
// credentials: its "talk to server" step failed with 401 (wrong user or
// password) or 403 (the user may not write).
type Refusal struct {
	URL    string `json:"url"`
	Status int    `json:"status"` // 401 | 403
	Detail string `json:"detail"`
}

// What names the refusal for a message.
func (r Refusal) What() string {
	if r.Status == 403 {
		return "refuses the shipper's output user its permissions (403)"
	}
	return "refuses the shipper's output credentials (401 Unauthorized)"
}

// Said is what the server added to its status line (its error body, as "test output" printed it),
// "" when it added nothing: Filebeat prints "401 Unauthorized: " with the body after the colon,
// which OpenSearch's security plugin sends empty.
func (r Refusal) Said() string {
	rest := strings.TrimSpace(r.Detail)
	if code, text, ok := strings.Cut(rest, " "); ok && (code == "401" || code == "403") {
		rest = text
		for _, reason := range []string{"Unauthorized", "Forbidden"} {
			rest = strings.TrimPrefix(rest, reason)
		}
	} else if rest == "401" || rest == "403" {
		rest = ""
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
}

// Refused is the first host that refused the shipper's credentials (a 401
// or 403 from "talk to server"), ok false when none did: not an
// unreachable output, which waiting or starting the indexer mends.
func (r Report) Refused() (Refusal, bool) {
	for _, h := range r.Hosts {
		st := h.FirstError()
		if st == nil || st.Name != "talk to server" {
			continue
		}
		switch {
		case strings.HasPrefix(st.Detail, "401"):
			return Refusal{URL: h.URL, Status: 401, Detail: st.Detail}, true
		case strings.HasPrefix(st.Detail, "403"):
			return Refusal{URL: h.URL, Status: 403, Detail: st.Detail}, true
		}
	}
	return Refusal{}, false
}

// Report is the parsed `test output` transcript.
type Report struct {
	Hosts []HostReport `json:"hosts"`
	OK    bool         `json:"ok"` // at least one host, and every host OK
	// Exiting is the shipper's "Exiting: …" message when it gave up.
	Exiting string `json:"exiting,omitempty"`
}

// ParseTestOutput parses the transcript of `shipper test output`:
//
//	elasticsearch: https://127.0.0.1:9200...
//	  parse url... OK
//	  connection...
//	    dial up... ERROR dial tcp 127.0.0.1:9200: connect: connection refused
//
// Lines it does not understand (logs, blank lines) are skipped. A host is
// OK when it has steps, none failed, and it got as far as talking to the
// server.
func ParseTestOutput(out string) Report {
	rep := Report{Hosts: []HostReport{}}
	var (
		cur    *HostReport
		groups []groupAt // open group headers by indent
	)
	finish := func() {
		if cur == nil {
			return
		}
		cur.OK = len(cur.Steps) > 0 && cur.FirstError() == nil && talked(*cur)
		rep.Hosts = append(rep.Hosts, *cur)
		cur = nil
	}
	for _, raw := range strings.Split(out, "\n") {
		line := strings.TrimRight(raw, "\r \t")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "Exiting: "); ok {
			rep.Exiting = msg
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		text := strings.TrimSpace(line)
		if indent == 0 {
			// "elasticsearch: https://127.0.0.1:9200..."
			name, url, ok := strings.Cut(text, ": ")
			if ok && strings.HasSuffix(url, "...") && !strings.Contains(name, " ") {
				finish()
				cur = &HostReport{Output: name, URL: strings.TrimSuffix(url, "..."), Steps: []Step{}, Info: map[string]string{}}
				groups = groups[:0]
			}
			continue
		}
		if cur == nil {
			continue
		}
		for len(groups) > 0 && groups[len(groups)-1].indent >= indent {
			groups = groups[:len(groups)-1]
		}
		group := ""
		if len(groups) > 0 {
			group = groups[len(groups)-1].name
		}
		if name, rest, ok := strings.Cut(text, "..."); ok && name != "" {
			rest = strings.TrimSpace(rest)
			if rest == "" {
				groups = append(groups, groupAt{indent: indent, name: name})
				continue
			}
			status, detail, _ := strings.Cut(rest, " ")
			switch status {
			case StatusOK, StatusError, StatusWarn:
				cur.Steps = append(cur.Steps, Step{Group: group, Name: name, Status: status, Detail: strings.TrimSpace(detail)})
			default:
				cur.Steps = append(cur.Steps, Step{Group: group, Name: name, Status: StatusError, Detail: rest})
			}
			continue
		}
		if key, val, ok := strings.Cut(text, ": "); ok {
			val = strings.TrimSpace(val)
			switch key {
			case "version":
				cur.Version = val
			case "TLS version":
				cur.TLSVersion = val
			default:
				cur.Info[key] = val
			}
		}
	}
	finish()
	rep.OK = len(rep.Hosts) > 0
	for _, h := range rep.Hosts {
		rep.OK = rep.OK && h.OK
	}
	return rep
}

type groupAt struct {
	indent int
	name   string
}

// talked reports whether the transcript reached "talk to server" (a
// transcript cut short before it is not a success).
func talked(h HostReport) bool {
	for _, s := range h.Steps {
		if s.Name == "talk to server" {
			return true
		}
	}
	return false
}

// ExitingLine returns the message of the last "Exiting: …" line in out, or "".
func ExitingLine(out string) string {
	msg := ""
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "Exiting: "); ok {
			msg = strings.TrimSpace(m)
		}
	}
	return msg
}
