package manager

import (
	"strings"
)

// Event is one log line entering analysis, after the syslog pre-decoding.
type Event struct {
	FullLog   string // the line as logged (syslog PRI removed)
	Program   string // predecoder.program_name
	SyslogTS  string // predecoder.timestamp
	Hostname  string // predecoder.hostname
	Message   string // the text after the syslog header: what <match> and decoders see
	Location  string // alert "location"
	AgentID   string
	AgentName string
	AgentIP   string
}

// ParseSyslog pre-decodes a syslog datagram (RFC 3164 or RFC 5424, as sent by logger) into an event.
func ParseSyslog(raw string) Event {
	line := strings.TrimRight(raw, "\r\n\x00")
	if strings.HasPrefix(line, "<") {
		if i := strings.IndexByte(line, '>'); i > 1 && i <= 4 && allDigits(line[1:i]) {
			line = line[i+1:]
		}
	}
	if ev, ok := parse5424(line); ok {
		return ev
	}
	ev := Event{FullLog: line, Message: line}
	// RFC 3164: "Mmm dd hh:mm:ss host tag[pid]: msg"
	if len(line) >= 16 && isMonth(line[:3]) && line[3] == ' ' && line[6] == ' ' && line[9] == ':' && line[12] == ':' && line[15] == ' ' {
		ev.SyslogTS = line[:15]
		rest := line[16:]
		host, after, ok := strings.Cut(rest, " ")
		if ok {
			prog, msg, ok := cutTag(after)
			if ok {
				ev.Hostname, ev.Program, ev.Message = host, prog, msg
				return ev
			}
		}
		if prog, msg, ok := cutTag(rest); ok {
			ev.Program, ev.Message = prog, msg
		}
		return ev
	}
	if prog, msg, ok := cutTag(line); ok {
		ev.Program, ev.Message = prog, msg
	}
	return ev
}

// cutTag splits "tag[pid]: msg" or "tag: msg".
func cutTag(s string) (string, string, bool) {
	i := strings.Index(s, ": ")
	if i <= 0 {
		return "", "", false
	}
	tag := s[:i]
	if j := strings.IndexByte(tag, '['); j > 0 && strings.HasSuffix(tag, "]") {
		tag = tag[:j]
	}
	if strings.ContainsAny(tag, " \t") {
		return "", "", false
	}
	return tag, s[i+2:], true
}

func parse5424(line string) (Event, bool) {
	if !strings.HasPrefix(line, "1 ") {
		return Event{}, false
	}
	f := strings.SplitN(line[2:], " ", 6) // TIMESTAMP HOST APP PROCID MSGID REST
	if len(f) < 5 {
		return Event{}, false
	}
	ev := Event{FullLog: line}
	nil5424 := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	ev.SyslogTS, ev.Hostname, ev.Program = nil5424(f[0]), nil5424(f[1]), nil5424(f[2])
	rest := ""
	if len(f) == 6 {
		rest = f[5]
	}
	// Structured data: "-" or one or more [id k="v" ...] elements.
	switch {
	case strings.HasPrefix(rest, "- "):
		rest = rest[2:]
	case rest == "-":
		rest = ""
	case strings.HasPrefix(rest, "["):
		i, inQuote := 0, false
		for i < len(rest) {
			c := rest[i]
			switch {
			case c == '\\' && inQuote:
				i++
			case c == '"':
				inQuote = !inQuote
			case c == ']' && !inQuote:
				if i+1 >= len(rest) || rest[i+1] != '[' {
					i++
					goto done
				}
			}
			i++
		}
	done:
		rest = strings.TrimPrefix(rest[min(i, len(rest)):], " ")
	}
	ev.Message = strings.TrimPrefix(rest, "\ufeff")
	return ev, true
}

func isMonth(s string) bool {
	return strings.Contains("JanFebMarAprMayJunJulAugSepOctNovDec", s) && len(s) == 3 && s[0] >= 'A' && s[0] <= 'Z'
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
