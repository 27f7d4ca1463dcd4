package manager

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// alertTimeFormat is analysisd's timestamp format (local time, milliseconds, numeric zone).
const alertTimeFormat = "2006-01-02T15:04:05.000-0700"

// Analyzer decodes events, evaluates the ruleset and writes alerts (alerts.json, alerts.log).
type Analyzer struct {
	home     Home
	rules    *Ruleset
	conf     *Config
	hostname string
	now      func() time.Time
	// Faults: alerts-stopped drops every event.
	Faults faults.Checker

	mu    sync.Mutex
	fired map[int]int
}

// NewAnalyzer creates an analyzer writing under the install directory.
func NewAnalyzer(h Home, conf *Config, rules *Ruleset, hostname string, now func() time.Time) *Analyzer {
	return &Analyzer{home: h, conf: conf, rules: rules, hostname: hostname, now: now, fired: map[int]int{}}
}

// Process analyses one event; it returns the alert line written (nil when no alert).
func (a *Analyzer) Process(ev Event) ([]byte, error) {
	if a.Faults.Active(faults.AlertsStopped) {
		return nil, nil
	}
	d := decode(&ev)
	r := a.rules.Evaluate(&ev, d)
	if r == nil || r.Level == 0 || r.NoAlert || r.Level < a.conf.LogAlertLevel {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fired[r.ID]++
	return a.write(ev, d, r, a.fired[r.ID])
}

func (a *Analyzer) write(ev Event, d *decoded, r *Rule, fired int) ([]byte, error) {
	path := a.home.AlertsJSON()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	now := a.now()
	id := strconv.FormatInt(now.Unix(), 10) + "." + strconv.FormatInt(st.Size(), 10)
	line, err := a.alertJSON(ev, d, r, fired, now, id)
	if err != nil {
		return nil, err
	}
	if a.conf.JSONOut {
		if _, err := f.Write(append(line, '\n')); err != nil {
			return nil, fmt.Errorf("alerts: %w", err)
		}
	}
	if a.conf.AlertsLog {
		if err := a.writeLog(ev, d, r, now, id); err != nil {
			return nil, err
		}
	}
	return line, nil
}

func (a *Analyzer) writeLog(ev Event, d *decoded, r *Rule, now time.Time, id string) error {
	f, err := os.OpenFile(a.home.Path("logs", "alerts", "alerts.log"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("alerts.log: %w", err)
	}
	defer f.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "** Alert %s: - %s,\n", id, strings.Join(r.Groups, ","))
	src := a.hostname + "->" + ev.Location
	if ev.AgentID != "" && ev.AgentID != "000" {
		src = fmt.Sprintf("(%s) %s->%s", ev.AgentName, ev.AgentIP, ev.Location)
	}
	fmt.Fprintf(&b, "%s %s\n", now.Format("2006 Jan 02 15:04:05"), src)
	fmt.Fprintf(&b, "Rule: %d (level %d) -> '%s'\n", r.ID, r.Level, r.Description)
	if d != nil {
		if v := d.get("srcip"); v != "" {
			fmt.Fprintf(&b, "Src IP: %s\n", v)
		}
		if v := d.get("srcuser"); v != "" {
			fmt.Fprintf(&b, "User: %s\n", v)
		} else if v := d.get("dstuser"); v != "" {
			fmt.Fprintf(&b, "User: %s\n", v)
		}
	}
	b.WriteString(ev.FullLog + "\n\n")
	_, err = f.WriteString(b.String())
	if err != nil {
		return fmt.Errorf("alerts.log: %w", err)
	}
	return nil
}

// orderedObject marshals keys in insertion order.
type orderedObject []kvAny

type kvAny struct {
	k string
	v any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(e.k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshalNoEscape(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func (a *Analyzer) alertJSON(ev Event, d *decoded, r *Rule, fired int, now time.Time, id string) ([]byte, error) {
	rule := orderedObject{{"level", r.Level}, {"description", r.Description}, {"id", strconv.Itoa(r.ID)}}
	if len(r.Mitre) > 0 {
		var tactics, techniques []string
		seen := map[string]bool{}
		for _, m := range r.Mitre {
			t := mitreTable[m]
			for _, ta := range t.tactics {
				if !seen[ta] {
					seen[ta] = true
					tactics = append(tactics, ta)
				}
			}
			if t.technique != "" {
				techniques = append(techniques, t.technique)
			}
		}
		rule = append(rule, kvAny{"mitre", orderedObject{{"id", r.Mitre}, {"tactic", tactics}, {"technique", techniques}}})
	}
	rule = append(rule, kvAny{"firedtimes", fired}, kvAny{"mail", false})
	groups := []string{}
	compliance := map[string][]string{}
	for _, g := range r.Groups {
		matched := false
		for _, c := range complianceOrder {
			if v, ok := strings.CutPrefix(g, c+"_"); ok {
				compliance[c] = append(compliance[c], v)
				matched = true
				break
			}
		}
		if !matched {
			groups = append(groups, g)
		}
	}
	rule = append(rule, kvAny{"groups", groups})
	for _, c := range complianceOrder {
		if len(compliance[c]) > 0 {
			rule = append(rule, kvAny{c, compliance[c]})
		}
	}
	agent := orderedObject{{"id", "000"}, {"name", a.hostname}}
	if ev.AgentID != "" && ev.AgentID != "000" {
		agent = orderedObject{{"id", ev.AgentID}, {"name", ev.AgentName}}
		if ev.AgentIP != "" && ev.AgentIP != "any" {
			agent = append(agent, kvAny{"ip", ev.AgentIP})
		}
	}
	doc := orderedObject{
		{"timestamp", now.Format(alertTimeFormat)},
		{"rule", rule},
		{"agent", agent},
		{"manager", orderedObject{{"name", a.hostname}}},
		{"id", id},
		{"full_log", ev.FullLog},
	}
	if ev.Program != "" || ev.SyslogTS != "" || ev.Hostname != "" {
		pre := orderedObject{}
		if ev.Program != "" {
			pre = append(pre, kvAny{"program_name", ev.Program})
		}
		if ev.SyslogTS != "" {
			pre = append(pre, kvAny{"timestamp", ev.SyslogTS})
		}
		if ev.Hostname != "" {
			pre = append(pre, kvAny{"hostname", ev.Hostname})
		}
		doc = append(doc, kvAny{"predecoder", pre})
	}
	dec := orderedObject{}
	if d != nil {
		dec = orderedObject{{"parent", d.parent}, {"name", d.name}}
	}
	doc = append(doc, kvAny{"decoder", dec})
	if d != nil && len(d.fields) > 0 {
		data := orderedObject{}
		for _, f := range d.fields {
			data = append(data, kvAny{f.k, f.v})
		}
		doc = append(doc, kvAny{"data", data})
	}
	doc = append(doc, kvAny{"location", ev.Location})
	return marshalNoEscape(doc)
}
