package managertest

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The real API validates every request against its specification before running it (connexion with
// strict validation and Wazuh's string formats, api/api/validator.py): undeclared query parameters,
// values of the wrong type or format, missing required parameters are a 400. The conformance suite
// (lab/emu/manager, TestConformance) holds this fake and the lab's emulator to the real
// specification with the same cases.

var (
	reNumbers      = regexp.MustCompile(`^\d+$`)
	reNames        = regexp.MustCompile(`^[\w\-.%]+$`)
	reAlphanumeric = regexp.MustCompile(`^[\w,\-.+\s:]+$`)
	reTimeframe    = regexp.MustCompile(`^(\d+[dhms]?)$`)
	reSearch       = regexp.MustCompile(`^[^;|&^*>]+$`)
	reSort         = regexp.MustCompile(`^[\w_\-,\s+.]+$`)
	reGroupName    = regexp.MustCompile(`^[\w.\-]+$`) // group_names: and not ".", ".." nor "all"
	reWazuhVersion = regexp.MustCompile(`^(?:[Ww]azuh )?[vV]?\d+\.\d+\.\d+$`)
	rePath         = regexp.MustCompile(`^[\w\-.\\/:]+$`)
	reWPKPath      = regexp.MustCompile(`^[\w\-./]+\.wpk$`)
)

// kinds of query parameter values.
const (
	kBool = iota
	kOffset
	kLimit
	kAgentIDs    // array of AgentID (numbers, minLength 3)
	kAgentIDsAll // … or "all"
	kStatus      // array of the four statuses
	kStatusAll   // … or "all"
	kTimeframe
	kNames    // array of names (select)
	kSort     // sort
	kSearch   // search
	kAlnum    // alphanumeric filters
	kName     // names (node_name)
	kUserIDs  // array of numbers
	kUserID   // one number (a path's user_id)
	kAnything // q
	kGroup    // group_names (group)
	kSynced   // group_config_status: synced | not synced
	kWazuhVersion
	kPath
	kWPKPath
	kPackageType
)

type paramSpec struct {
	kind     int
	required bool
}

var common = map[string]paramSpec{"pretty": {kind: kBool}, "wait_for_complete": {kind: kBool}}

var agentFilters = map[string]paramSpec{"q": {kind: kAnything}, "os.platform": {kind: kAlnum}, "os.version": {kind: kAlnum},
	"os.name": {kind: kAlnum}, "manager": {kind: kAlnum}, "version": {kind: kAlnum}, "group": {kind: kGroup},
	"node_name": {kind: kName}, "name": {kind: kAlnum}, "ip": {kind: kAlnum}, "registerIP": {kind: kAlnum}}

func with(base map[string]paramSpec, extra map[string]paramSpec) map[string]paramSpec {
	out := map[string]paramSpec{}
	for _, m := range []map[string]paramSpec{common, base, extra} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// operations are the served routes and their query parameters (from the real specification).
var operations = map[string]map[string]paramSpec{
	"GET /":                                 {"pretty": {kind: kBool}},
	"POST /security/user/authenticate":      {"raw": {kind: kBool}},
	"GET /security/user/authenticate":       {"raw": {kind: kBool}},
	"GET /manager/info":                     common,
	"GET /manager/status":                   common,
	"GET /manager/configuration/validation": common,
	"GET /cluster/status":                   common,
	"GET /agents/summary/status":            common,
	"GET /agents": with(agentFilters, map[string]paramSpec{"agents_list": {kind: kAgentIDs}, "offset": {kind: kOffset},
		"limit": {kind: kLimit}, "select": {kind: kNames}, "sort": {kind: kSort}, "search": {kind: kSearch},
		"status": {kind: kStatus}, "older_than": {kind: kTimeframe}, "group_config_status": {kind: kSynced},
		"distinct": {kind: kBool}}),
	"DELETE /agents": with(agentFilters, map[string]paramSpec{"agents_list": {kind: kAgentIDsAll, required: true},
		"status": {kind: kStatusAll, required: true}, "older_than": {kind: kTimeframe}, "purge": {kind: kBool}}),
	"PUT /agents/restart":            with(nil, map[string]paramSpec{"agents_list": {kind: kAgentIDs}}),
	"PUT /agents/{agent_id}/restart": common,
	"GET /security/users": with(nil, map[string]paramSpec{"user_ids": {kind: kUserIDs}, "offset": {kind: kOffset},
		"limit": {kind: kLimit}, "select": {kind: kNames}, "sort": {kind: kSort}, "search": {kind: kSearch},
		"q": {kind: kAnything}, "distinct": {kind: kBool}}),
	"PUT /agents/upgrade": with(agentFilters, map[string]paramSpec{"agents_list": {kind: kAgentIDsAll, required: true},
		"wpk_repo": {kind: kPath}, "upgrade_version": {kind: kWazuhVersion}, "use_http": {kind: kBool}, "force": {kind: kBool},
		"package_type": {kind: kPackageType}}),
	"PUT /agents/upgrade_custom": with(agentFilters, map[string]paramSpec{"agents_list": {kind: kAgentIDsAll, required: true},
		"file_path": {kind: kWPKPath, required: true}, "installer": {kind: kAlnum}}),
	"GET /agents/upgrade_result":    with(agentFilters, map[string]paramSpec{"agents_list": {kind: kAgentIDs}}),
	"POST /security/users":          common,
	"PUT /security/users/{user_id}": common,
}

// route maps a request to its operation key ("METHOD /path/{param}").
func route(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "agents" && parts[2] == "restart":
		return method + " /agents/{agent_id}/restart"
	case len(parts) == 3 && parts[0] == "security" && parts[1] == "users":
		return method + " /security/users/{user_id}"
	}
	return method + " " + path
}

// validParams answers 400 like the real validator and reports false when the request is refused.
func (s *Server) validParams(w http.ResponseWriter, r *http.Request, key string) bool {
	specs, ok := operations[key]
	if !ok {
		return true // not a served operation: 404/405 later
	}
	bad := func(detail string) bool {
		problem(w, http.StatusBadRequest, "Bad Request", detail, 0)
		return false
	}
	q := r.URL.Query()
	var extra []string
	for k := range q {
		if _, ok := specs[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return bad(fmt.Sprintf("Extra query parameter(s) %s not in spec", strings.Join(extra, ", ")))
	}
	for name, sp := range specs {
		v, present := q[name]
		if !present {
			if sp.required {
				return bad(fmt.Sprintf("Missing query parameter '%s'", name))
			}
			continue
		}
		if msg := checkValue(sp.kind, v[0]); msg != "" {
			return bad(msg)
		}
	}
	switch key {
	case "PUT /agents/{agent_id}/restart":
		id := strings.Split(strings.Trim(r.URL.Path, "/"), "/")[1]
		if msg := checkValue(kAgentIDs, id); msg != "" {
			return bad(msg)
		}
	case "PUT /security/users/{user_id}":
		id := strings.Split(strings.Trim(r.URL.Path, "/"), "/")[2]
		if msg := checkValue(kUserID, id); msg != "" {
			return bad(msg)
		}
	}
	return true
}

func checkValue(kind int, v string) string {
	statuses := []string{"active", "pending", "never_connected", "disconnected"}
	switch kind {
	case kBool:
		if v != "true" && v != "false" {
			return fmt.Sprintf("'%s' is not of type 'boolean'", v)
		}
	case kOffset, kLimit:
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			return fmt.Sprintf("'%s' is not of type 'integer'", v)
		case kind == kOffset && n < 0:
			return fmt.Sprintf("%d is less than the minimum of 0", n)
		case kind == kLimit && n < 1:
			return fmt.Sprintf("%d is less than the minimum of 1", n)
		case kind == kLimit && n > 100000:
			return fmt.Sprintf("%d is greater than the maximum of 100000", n)
		}
	case kAgentIDs, kAgentIDsAll, kUserIDs:
		for _, id := range strings.Split(v, ",") {
			switch {
			case kind == kAgentIDsAll && id == "all":
			case !reNumbers.MatchString(id):
				return fmt.Sprintf("'%s' is not a 'numbers'", id)
			case kind != kUserIDs && len(id) < 3:
				return fmt.Sprintf("'%s' is too short", id)
			}
		}
	case kStatus, kStatusAll:
		for _, st := range strings.Split(v, ",") {
			if !slices.Contains(statuses, st) && (kind != kStatusAll || st != "all") {
				return fmt.Sprintf("'%s' is not one of %v", st, statuses)
			}
		}
	case kNames:
		for _, f := range strings.Split(v, ",") {
			if msg := checkFormat(kName, f); msg != "" {
				return msg
			}
		}
	case kPackageType:
		if v != "rpm" && v != "deb" {
			return fmt.Sprintf("'%s' is not one of ['rpm', 'deb']", v)
		}
	case kSynced:
		if v != "synced" && v != "not synced" {
			return fmt.Sprintf("'%s' is not one of ['synced', 'not synced']", v)
		}
	case kGroup:
		if !reGroupName.MatchString(v) || v == "." || v == ".." || v == "all" {
			return fmt.Sprintf("'%s' is not a 'group_names'", v)
		}
	default:
		return checkFormat(kind, v)
	}
	return ""
}

// stringFormats are Wazuh's string formats of the kinds that are one string (api/api/validator.py).
var stringFormats = map[int]struct {
	name string
	re   *regexp.Regexp
}{
	kTimeframe:    {"timeframe", reTimeframe},
	kName:         {"names", reNames},
	kSort:         {"sort", reSort},
	kSearch:       {"search", reSearch},
	kAlnum:        {"alphanumeric", reAlphanumeric},
	kUserID:       {"numbers", reNumbers},
	kWazuhVersion: {"wazuh_version", reWazuhVersion},
	kPath:         {"path", rePath},
	kWPKPath:      {"wpk_path", reWPKPath},
}

// checkFormat answers the validator's message when v breaks kind's string format ("" when it does
// not, or kind has none).
func checkFormat(kind int, v string) string {
	if f, ok := stringFormats[kind]; ok && !f.re.MatchString(v) {
		return fmt.Sprintf("'%s' is not a '%s'", v, f.name)
	}
	return ""
}

// agentFields are the fields of an agent the framework accepts in select, sort and q.
var agentFields = []string{"id", "name", "ip", "registerIP", "status", "status_code", "version", "manager", "node_name",
	"dateAdd", "lastKeepAlive", "group", "configSum", "mergedSum", "group_config_status", "disconnection_time",
	"os", "os.name", "os.platform", "os.version", "os.major", "os.minor", "os.codename", "os.arch", "os.uname", "os.build"}

var reQueryTerm = regexp.MustCompile(`^([\w.]+)(=|!=|<|>|~)(.*)$`)

// frameworkFields answers the framework's errors for unknown select (1724), sort (1403) and q (1408) fields.
func frameworkFields(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	fail := func(code int, detail string) bool {
		writeJSON(w, http.StatusBadRequest, map[string]any{"title": "Bad Request", "detail": detail, "error": code})
		return false
	}
	for _, f := range splitList(q.Get("select")) {
		if !slices.Contains(agentFields, f) {
			return fail(1724, "Not a valid select field: Allowed select fields: "+strings.Join(agentFields, ", ")+". Fields: "+f)
		}
	}
	for _, f := range splitList(q.Get("sort")) {
		if f = strings.TrimLeft(f, "+- "); !slices.Contains(agentFields, f) {
			return fail(1403, "Not a valid sort field : Allowed sort fields: "+strings.Join(agentFields, ", ")+". Fields: "+f)
		}
	}
	if v := q.Get("q"); v != "" {
		for _, term := range strings.FieldsFunc(v, func(c rune) bool { return c == ';' || c == ',' }) {
			m := reQueryTerm.FindStringSubmatch(strings.Trim(term, "()"))
			if m == nil {
				return fail(1407, "Query does not match expected format")
			}
			if !slices.Contains(agentFields, m[1]) {
				return fail(1408, "Field does not exist.: "+m[1])
			}
		}
	}
	return true
}
