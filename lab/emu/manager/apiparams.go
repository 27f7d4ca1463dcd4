package manager

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ---- parameters: connexion-style validation, the agents filter, the query string ----

var idRe = regexp.MustCompile(`^\d{1,}$`)

var validStatus = []string{StatusActive, StatusPending, StatusNeverConnected, StatusDisconnected}

// badParam answers connexion-style validation errors.
func badParam(w http.ResponseWriter, detail string) {
	writeProblem(w, 400, problem{Detail: detail})
}

// Formats of the real API's validator (api/api/validator.py) for the query parameters it serves.
var (
	reAlphanumeric = regexp.MustCompile(`^[\w,\-.+\s:]+$`)
	reNames        = regexp.MustCompile(`^[\w\-.%]+$`)
	reSearch       = regexp.MustCompile(`^[^;|&^*>]+$`)
	reSort         = regexp.MustCompile(`^[\w_\-,\s+.]+$`)
	reGroupName    = regexp.MustCompile(`^[\w.\-]+$`)
	reTimeframe    = regexp.MustCompile(`^(\d+[dhms]?)$`) // no "w": ossec.conf's intervals take weeks, the API does not
)

// paramFormat checks one query parameter's value like connexion does with the specification's schema:
// booleans, Wazuh's string formats. It returns the validator's message, or "" when the value is valid.
func paramFormat(name, v string) string {
	switch name {
	case "pretty", "wait_for_complete", "raw", "distinct", "purge":
		if v != "true" && v != "false" {
			return fmt.Sprintf("'%s' is not of type 'boolean'", v)
		}
	case "select":
		for _, f := range strings.Split(v, ",") {
			if !reNames.MatchString(f) {
				return fmt.Sprintf("'%s' is not a 'names'", f)
			}
		}
	case "group":
		if !reGroupName.MatchString(v) || v == "." || v == ".." || v == "all" {
			return fmt.Sprintf("'%s' is not a 'group_names'", v)
		}
	case "group_config_status":
		if v != "synced" && v != "not synced" {
			return fmt.Sprintf("'%s' is not one of ['synced', 'not synced']", v)
		}
	default:
		if f, ok := stringFormats[name]; ok && !f.re.MatchString(v) {
			return fmt.Sprintf("'%s' is not a '%s'", v, f.name)
		}
	}
	return ""
}

// stringFormat is one of Wazuh's string formats: its name, as the validator's message says it, and
// its pattern.
type stringFormat struct {
	name string
	re   *regexp.Regexp
}

// stringFormats are the parameters whose value the specification gives one of Wazuh's string formats.
var stringFormats = func() map[string]stringFormat {
	m := map[string]stringFormat{"node_name": {"names", reNames}, "search": {"search", reSearch}, "sort": {"sort", reSort},
		"older_than": {"timeframe", reTimeframe}}
	for _, p := range []string{"name", "ip", "registerIP", "version", "manager", "os.platform", "os.version", "os.name"} {
		m[p] = stringFormat{"alphanumeric", reAlphanumeric}
	}
	return m
}()

// checkParams rejects query parameters the endpoint does not define (connexion's strict validation)
// and values the specification's schema refuses.
func checkParams(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	var extra []string
	q := queryOf(r)
	for k := range q {
		if !slices.Contains(allowed, k) && k != "pretty" && k != "wait_for_complete" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		badParam(w, fmt.Sprintf("Extra query parameter(s) %s not in spec", strings.Join(extra, ", ")))
		return false
	}
	for k, vs := range q {
		for _, v := range vs {
			if msg := paramFormat(k, v); msg != "" {
				badParam(w, msg)
				return false
			}
		}
	}
	return true
}

func parseIDList(w http.ResponseWriter, raw string, allowAll bool) ([]int, bool, bool) {
	if raw == "" {
		return nil, false, true
	}
	var ids []int
	for _, p := range strings.Split(raw, ",") {
		p = strings.TrimSpace(p)
		if allowAll && p == "all" {
			return nil, true, true
		}
		if !idRe.MatchString(p) {
			badParam(w, fmt.Sprintf("'%s' is not a 'numbers'", p))
			return nil, false, false
		}
		if len(p) < 3 {
			badParam(w, fmt.Sprintf("'%s' is too short", p))
			return nil, false, false
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			badParam(w, fmt.Sprintf("'%s' is not a valid agent id", p))
			return nil, false, false
		}
		ids = append(ids, n)
	}
	return ids, false, true
}

func parseStatusList(w http.ResponseWriter, raw string, allowAll bool) ([]string, bool) {
	if raw == "" {
		return nil, true
	}
	var out []string
	for _, p := range strings.Split(raw, ",") {
		p = strings.ToLower(p) // the real API lowercases status values (test "Upper and lowercase letters")
		if (allowAll && p == "all") || slices.Contains(validStatus, p) {
			out = append(out, p)
			continue
		}
		opts := "['active', 'pending', 'never_connected', 'disconnected']"
		if allowAll {
			opts = "['all', 'active', 'pending', 'never_connected', 'disconnected']"
		}
		badParam(w, fmt.Sprintf("'%s' is not one of %s", p, opts))
		return nil, false
	}
	return out, true
}

// parsePage reads the real API's pagination parameters: offset (default 0, not negative) and limit
// (default 500, 1 to 100000); a bad one is answered 400 and ok is false.
func parsePage(w http.ResponseWriter, q map[string][]string) (offset, limit int, ok bool) {
	if offset, ok = parseIntParam(w, q, "offset", 0, 0, 0); !ok {
		return 0, 0, false
	}
	limit, ok = parseIntParam(w, q, "limit", 500, 1, 100000)
	return offset, limit, ok
}

func parseIntParam(w http.ResponseWriter, q map[string][]string, name string, def, lo, hi int) (int, bool) {
	v, ok := q[name]
	if !ok || len(v) == 0 || v[0] == "" {
		return def, true
	}
	n, err := strconv.Atoi(v[0])
	switch {
	case err != nil && idRe.MatchString(v[0]):
		// connexion accepts any integer (Python has no overflow); wazuh-db's SQLite then fails.
		writeWazuhError(w, 400, 2003, "")
		return 0, false
	case err != nil:
		badParam(w, fmt.Sprintf("'%s' is not of type 'integer'", v[0]))
		return 0, false
	case n < lo:
		badParam(w, fmt.Sprintf("%d is less than the minimum of %d", n, lo))
		return 0, false
	case hi > 0 && n > hi:
		badParam(w, fmt.Sprintf("%d is greater than the maximum of %d", n, hi))
		return 0, false
	}
	return n, true
}

func (s *APIServer) loadAgents(w http.ResponseWriter) ([]*Agent, bool) {
	s.settleUpgrades()
	agents, err := s.agents.Agents()
	if err != nil {
		s.o.Logger.Error("agents database", "err", err)
		writeProblem(w, 500, problem{Detail: "Error in wazuh-db", Error: 2000})
		return nil, false
	}
	return agents, true
}

// agentFilter holds the GET /agents filters.
type agentFilter struct {
	status    []string
	olderThan time.Duration
	q         *qNode
	search    string
	negSearch bool
	equals    map[string]string
}

func (f *agentFilter) match(c *viewCtx, a *Agent) bool {
	if len(f.status) > 0 && !slices.Contains(f.status, "all") && !slices.Contains(f.status, c.status(a)) {
		return false
	}
	if f.olderThan > 0 {
		t := c.checkTime(a)
		if t == 0 || a.ID == 0 || c.now.Sub(time.Unix(t, 0)) < f.olderThan {
			return false
		}
	}
	for k, v := range f.equals {
		if k == "group" {
			if !slices.Contains(a.Group, v) {
				return false
			}
			continue
		}
		if k == "version" {
			if compareVersions(c.version(a), v) != 0 {
				return false
			}
			continue
		}
		if c.field(a, k) != v {
			return false
		}
	}
	if f.q != nil && !f.q.match(c, a) {
		return false
	}
	if f.search != "" {
		found := false
		for _, fl := range []string{"id", "name", "ip", "registerIP", "status", "version", "os.name", "os.platform", "node_name"} {
			if strings.Contains(strings.ToLower(c.field(a, fl)), f.search) {
				found = true
				break
			}
		}
		if found == f.negSearch {
			return false
		}
	}
	return true
}

var agentFilterParams = map[string]string{"name": "name", "ip": "ip", "registerIP": "registerIP", "version": "version",
	"manager": "manager", "node_name": "node_name", "os.platform": "os.platform", "os.version": "os.version",
	"os.name": "os.name", "group": "group", "group_config_status": "group_config_status"}

func (s *APIServer) parseFilter(w http.ResponseWriter, q map[string][]string, allowAllStatus bool) (*agentFilter, bool) {
	f := &agentFilter{equals: map[string]string{}}
	var ok bool
	if f.status, ok = parseStatusList(w, first(q, "status"), allowAllStatus); !ok {
		return nil, false
	}
	if v := first(q, "older_than"); v != "" {
		d, err := parseTimeframe(v)
		if err != nil {
			badParam(w, fmt.Sprintf("'%s' is not a 'timeframe'", v))
			return nil, false
		}
		f.olderThan = d
	}
	if v := first(q, "q"); v != "" {
		n, ok := queryParam(w, v, validField)
		if !ok {
			return nil, false
		}
		f.q = n
	}
	if v := first(q, "search"); v != "" {
		f.search, f.negSearch = strings.ToLower(strings.TrimPrefix(v, "-")), strings.HasPrefix(v, "-")
	}
	for p, field := range agentFilterParams {
		if v := first(q, p); v != "" {
			f.equals[field] = v
		}
	}
	return f, true
}

func first(q map[string][]string, k string) string {
	if v := q[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// queryOf parses the query string splitting only on '&': Wazuh's query language uses ';' (AND), which
// net/url rejects as a separator.
func queryOf(r *http.Request) url.Values {
	out := url.Values{}
	for _, part := range strings.Split(r.URL.RawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		ku, err1 := url.QueryUnescape(k)
		vu, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			ku, vu = k, v
		}
		out.Add(ku, vu)
	}
	return out
}
