// Package conformance is the manager API conformance suite: one table of real-shaped requests, each
// with the status and Wazuh error code the real v4.9.0 API answers, run against every manager API
// siemctl is tested with: internal/manager/managertest (the unit tests' fake), the emulator in
// lab/emu/manager and a running lab's manager (an e2e test in lab/cmd/siemlab). Every request is
// checked with kin-openapi against the real specification (the real validator must reject exactly
// the cases answered 400 without a code), and every response must be documented for its operation
// with a body valid for its status. The same table for every target, so the fakes cannot drift from
// each other or from the real API.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

// wazuhFormats are the string formats of the real API's validator (api/api/validator.py of v4.9.0) that
// the served operations use: the specification names them, connexion checks them with these patterns.
var wazuhFormats = map[string]string{
	"numbers":        `^\d+$`,
	"numbers_or_all": `^(\d+|all)$`,
	"names":          `^[\w\-.%]+$`,
	"alphanumeric":   `^[\w,\-.+\s:]+$`,
	"timeframe":      `^(\d+[dhms]?)$`,
	"search":         `^[^;|&^*>]+$`,
	"sort":           `^[\w_\-,\s+.]+$`,
	"group_names":    `^(?!^(\.{1,2}|all)$)[\w.\-]+$`,
	"password":       `^.+$`,
	"wazuh_version":  `^(?:[Ww]azuh )?[vV]?\d+\.\d+\.\d+$`,
	"path":           `^[\w\-.\\/:]+$`,
	"wpk_path":       `^[\w\-./]+\.wpk$`,
}

type spec struct {
	doc     *openapi3.T
	formats map[string]openapi3.StringFormatValidator
}

var (
	specOnce sync.Once
	specDoc  *spec
	specErr  error
)

// loadSpec reads the real specification. Two adjustments make kin-openapi read it as connexion does,
// both explained: connexion parses query arrays comma-separated (`agents_list=001,002`), which in
// OpenAPI terms is explode: false; and the real document does not pass kin-openapi's own document
// validation (schema AgentGroupDeleted is an array without items), so it is not Validate()d.
func loadSpec(t *testing.T) *spec {
	t.Helper()
	path := wazuhreal.Path(t, "wazuh-v4.9.0", "api-spec.json")
	specOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile(path)
		if err != nil {
			specErr = err
			return
		}
		f := false
		for _, pi := range doc.Paths.Map() {
			for _, op := range pi.Operations() {
				for _, p := range op.Parameters {
					if p.Value.In == "query" && p.Value.Schema != nil && p.Value.Schema.Value.Type.Is("array") {
						p.Value.Explode = &f
					}
				}
			}
		}
		s := &spec{doc: doc, formats: map[string]openapi3.StringFormatValidator{}}
		for name, re := range wazuhFormats {
			s.formats[name] = openapi3.NewRegexpFormatValidator(strings.ReplaceAll(re, `(?!^(\.{1,2}|all)$)`, ""))
		}
		// Go's regexp has no lookahead: group_names also refuses ".", ".." and "all".
		gn := s.formats["group_names"]
		s.formats["group_names"] = openapi3.NewCallbackValidator(func(v string) error {
			if v == "." || v == ".." || v == "all" {
				return fmt.Errorf("%q is not a valid group name", v)
			}
			return gn.Validate(v)
		})
		specDoc = s
	})
	if specErr != nil {
		t.Fatalf("load the real API specification: %v", specErr)
	}
	return specDoc
}

func (s *spec) router(t *testing.T, base string) routers.Router {
	t.Helper()
	doc := *s.doc
	doc.Servers = openapi3.Servers{{URL: base}}
	r, err := gorillamux.NewRouter(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (s *spec) options() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus:   true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.EnableFormatValidation(), openapi3.WithStringFormatValidators(s.formats)},
	}
}

// Target is one manager API under test.
type Target struct {
	Name   string
	URL    string // base URL, e.g. https://127.0.0.1:55000
	User   string
	Pass   string
	Client *http.Client // nil: http.DefaultClient
	// Fault turns a fault on or off: "not-ready" (every daemon restarting: 1017) or "rate-limit" (429 / 6001).
	Fault func(t *testing.T, kind string, on bool)
}

// Case is one request. want is the status the real API answers; code the Wazuh error
// code in the body (0: none expected).
type Case struct {
	name   string
	method string
	path   string // with query
	body   string
	auth   string // "" token, "none", "bad-token", "basic", "bad-basic"
	fault  string
	want   int
	code   int
}

// Cases is the table. Some cases change state (a user created, user 2's password changed, agent 003
// removed, agents restarted): a target is used once, after what else the test checks on it.
var Cases = []Case{
	// Valid requests.
	{name: "api info", method: "GET", path: "/", want: 200},
	{name: "api info pretty", method: "GET", path: "/?pretty=true", want: 200},
	{name: "login", method: "POST", path: "/security/user/authenticate", auth: "basic", want: 200},
	{name: "login raw", method: "POST", path: "/security/user/authenticate?raw=false", auth: "basic", want: 200},
	{name: "login (deprecated GET)", method: "GET", path: "/security/user/authenticate", auth: "basic", want: 200},
	{name: "agents", method: "GET", path: "/agents", want: 200},
	{name: "agents page", method: "GET", path: "/agents?offset=1&limit=2", want: 200},
	{name: "agents list", method: "GET", path: "/agents?agents_list=001,002", want: 200},
	{name: "agents list with unknown id", method: "GET", path: "/agents?agents_list=001,999", want: 200},
	{name: "agents by status", method: "GET", path: "/agents?status=active,disconnected", want: 200},
	{name: "agents select", method: "GET", path: "/agents?select=name,ip,os.name", want: 200},
	{name: "agents sort", method: "GET", path: "/agents?sort=-name", want: 200},
	{name: "agents query", method: "GET", path: "/agents?q=status%3Dactive", want: 200},
	{name: "agents older than", method: "GET", path: "/agents?older_than=1d", want: 200},
	{name: "agents search", method: "GET", path: "/agents?search=agent", want: 200},
	{name: "agents wait_for_complete", method: "GET", path: "/agents?wait_for_complete=true", want: 200},
	{name: "agents summary", method: "GET", path: "/agents/summary/status", want: 200},
	{name: "restart one (query)", method: "PUT", path: "/agents/restart?agents_list=001", want: 200},
	{name: "restart unknown and manager", method: "PUT", path: "/agents/restart?agents_list=000,999", want: 200},
	{name: "restart all", method: "PUT", path: "/agents/restart", want: 200},
	{name: "restart one (path)", method: "PUT", path: "/agents/002/restart", want: 200},
	{name: "manager info", method: "GET", path: "/manager/info", want: 200},
	{name: "manager status", method: "GET", path: "/manager/status", want: 200},
	{name: "config validation", method: "GET", path: "/manager/configuration/validation", want: 200},
	{name: "cluster status", method: "GET", path: "/cluster/status", want: 200},
	{name: "users", method: "GET", path: "/security/users", want: 200},
	{name: "users page", method: "GET", path: "/security/users?offset=0&limit=1", want: 200},
	{name: "users by id", method: "GET", path: "/security/users?user_ids=1,2", want: 200},
	{name: "create user", method: "POST", path: "/security/users", body: `{"username":"newuser1","password":"Secr3t.Pass1!"}`, want: 200},
	{name: "create existing user", method: "POST", path: "/security/users", body: `{"username":"newuser1","password":"Secr3t.Pass1!"}`, want: 200},
	{name: "update user", method: "PUT", path: "/security/users/2", body: `{"password":"N3w.Passw0rd!"}`, want: 200},
	{name: "delete agent", method: "DELETE", path: "/agents?agents_list=003&status=all&older_than=0s", want: 200},
	{name: "delete unknown agent", method: "DELETE", path: "/agents?agents_list=999&status=all&older_than=0s", want: 200},

	// Requests the real validator (connexion with strict validation and Wazuh's formats) rejects.
	{name: "limit 0", method: "GET", path: "/agents?limit=0", want: 400},
	{name: "limit above maximum", method: "GET", path: "/agents?limit=100001", want: 400},
	{name: "limit not an integer", method: "GET", path: "/agents?limit=ten", want: 400},
	{name: "negative offset", method: "GET", path: "/agents?offset=-1", want: 400},
	{name: "agent id too short", method: "GET", path: "/agents?agents_list=1", want: 400},
	{name: "agent id not a number", method: "GET", path: "/agents?agents_list=abc", want: 400},
	{name: "unknown status", method: "GET", path: "/agents?status=running", want: 400},
	{name: "bad timeframe", method: "GET", path: "/agents?older_than=7x", want: 400},
	{name: "pretty not a boolean", method: "GET", path: "/agents?pretty=maybe", want: 400},
	{name: "extra query parameter", method: "GET", path: "/agents?bogus=1", want: 400},
	{name: "extra parameter on info", method: "GET", path: "/manager/info?limit=1", want: 400},
	{name: "bad search", method: "GET", path: "/agents?search=a%3Bb", want: 400},
	{name: "bad name filter", method: "GET", path: "/agents?name=%2A", want: 400},
	{name: "delete without agents_list", method: "DELETE", path: "/agents?status=all", want: 400},
	{name: "delete without status", method: "DELETE", path: "/agents?agents_list=001", want: 400},
	{name: "restart path id too short", method: "PUT", path: "/agents/1/restart", want: 400},
	{name: "restart bad list", method: "PUT", path: "/agents/restart?agents_list=x", want: 400},
	{name: "user ids not numbers", method: "GET", path: "/security/users?user_ids=a", want: 400},
	{name: "username too short", method: "POST", path: "/security/users", body: `{"username":"ab","password":"Secr3t.Pass1!"}`, want: 400},
	{name: "username missing", method: "POST", path: "/security/users", body: `{"password":"Secr3t.Pass1!"}`, want: 400},
	{name: "login raw not a boolean", method: "POST", path: "/security/user/authenticate?raw=yes", auth: "basic", want: 400},
	// Every Wazuh string format of a served operation's parameters, one value it refuses each
	// (TestCasesCoverEveryFormat keeps this list complete against the specification).
	{name: "timeframe in weeks", method: "GET", path: "/agents?older_than=2w", want: 400},
	{name: "delete timeframe in weeks", method: "DELETE", path: "/agents?agents_list=001&status=all&older_than=2w", want: 400},
	{name: "delete bad agent id", method: "DELETE", path: "/agents?agents_list=x&status=all", want: 400},
	{name: "delete with search", method: "DELETE", path: "/agents?agents_list=001&status=all&search=agent", want: 400},
	{name: "delete with group_config_status", method: "DELETE", path: "/agents?agents_list=001&status=all&group_config_status=synced", want: 400},
	{name: "bad group name", method: "GET", path: "/agents?group=all", want: 400},
	{name: "delete bad group name", method: "DELETE", path: "/agents?agents_list=001&status=all&group=..", want: 400},
	{name: "bad node name", method: "GET", path: "/agents?node_name=a%20b", want: 400},
	{name: "delete bad node name", method: "DELETE", path: "/agents?agents_list=001&status=all&node_name=a%20b", want: 400},
	{name: "bad select", method: "GET", path: "/agents?select=os%20name", want: 400},
	{name: "bad sort", method: "GET", path: "/agents?sort=name%3B", want: 400},
	{name: "bad os.platform", method: "GET", path: "/agents?os.platform=test_%25_platform", want: 400},
	{name: "bad os.name", method: "GET", path: "/agents?os.name=Debian%20GNU%2FLinux", want: 400},
	{name: "bad os.version", method: "GET", path: "/agents?os.version=%2A", want: 400},
	{name: "bad version", method: "GET", path: "/agents?version=%2A", want: 400},
	{name: "bad manager", method: "GET", path: "/agents?manager=%2A", want: 400},
	{name: "bad ip", method: "GET", path: "/agents?ip=%2A", want: 400},
	{name: "bad registerIP", method: "GET", path: "/agents?registerIP=%2A", want: 400},
	{name: "delete bad name filter", method: "DELETE", path: "/agents?agents_list=001&status=all&name=%2A", want: 400},
	{name: "users bad select", method: "GET", path: "/security/users?select=a%20b", want: 400},
	{name: "users bad sort", method: "GET", path: "/security/users?sort=a%3B", want: 400},
	{name: "users bad search", method: "GET", path: "/security/users?search=a%3Bb", want: 400},
	{name: "login (GET) raw not a boolean", method: "GET", path: "/security/user/authenticate?raw=yes", auth: "basic", want: 400},
	{name: "bad group_config_status", method: "GET", path: "/agents?group_config_status=stale", want: 400},
	{name: "distinct not a boolean", method: "GET", path: "/agents?distinct=maybe", want: 400},
	{name: "users limit 0", method: "GET", path: "/security/users?limit=0", want: 400},
	{name: "users negative offset", method: "GET", path: "/security/users?offset=-1", want: 400},
	{name: "users distinct not a boolean", method: "GET", path: "/security/users?distinct=maybe", want: 400},
	{name: "delete purge not a boolean", method: "DELETE", path: "/agents?agents_list=001&status=all&purge=maybe", want: 400},
	{name: "delete bad os.platform", method: "DELETE", path: "/agents?agents_list=001&status=all&os.platform=a%2Ab", want: 400},
	{name: "delete bad os.version", method: "DELETE", path: "/agents?agents_list=001&status=all&os.version=%2A", want: 400},
	{name: "delete bad os.name", method: "DELETE", path: "/agents?agents_list=001&status=all&os.name=a%2Fb", want: 400},
	{name: "delete bad manager", method: "DELETE", path: "/agents?agents_list=001&status=all&manager=%2A", want: 400},
	{name: "delete bad version", method: "DELETE", path: "/agents?agents_list=001&status=all&version=%2A", want: 400},
	{name: "delete bad ip", method: "DELETE", path: "/agents?agents_list=001&status=all&ip=%2A", want: 400},
	{name: "delete bad registerIP", method: "DELETE", path: "/agents?agents_list=001&status=all&registerIP=%2A", want: 400},
	{name: "update user id not a number", method: "PUT", path: "/security/users/abc", body: `{"password":"N3w.Passw0rd!"}`, want: 400},

	// Valid requests the framework refuses (400 with a Wazuh error code).
	{name: "unknown select field", method: "GET", path: "/agents?select=bogus", want: 400, code: 1724},
	{name: "unknown sort field", method: "GET", path: "/agents?sort=bogus", want: 400, code: 1403},
	{name: "unknown query field", method: "GET", path: "/agents?q=bogus%3D1", want: 400, code: 1408},
	{name: "short password", method: "POST", path: "/security/users", body: `{"username":"weakuser","password":"short"}`, want: 400, code: 5009},
	{name: "weak password", method: "POST", path: "/security/users", body: `{"username":"weakuser","password":"longenoughpw"}`, want: 400, code: 5007},

	// Authentication.
	{name: "no token", method: "GET", path: "/agents", auth: "none", want: 401},
	{name: "bad token", method: "GET", path: "/agents", auth: "bad-token", want: 401},
	{name: "bad credentials", method: "POST", path: "/security/user/authenticate", auth: "bad-basic", want: 401},

	// Faults.
	{name: "daemons not ready", method: "GET", path: "/agents", fault: "not-ready", want: 400, code: 1017},
	{name: "manager status while not ready", method: "GET", path: "/manager/status", fault: "not-ready", want: 200},
	{name: "api info while not ready", method: "GET", path: "/", fault: "not-ready", want: 200},
	{name: "rate limited", method: "GET", path: "/agents", fault: "rate-limit", want: 429, code: 6001},
}

// upgradeCases are the agent upgrade endpoints' cases: valid requests (tasks created, agents refused
// per item), and for each operation every parameter given a value the real validator refuses.
func upgradeCases() []Case {
	cs := []Case{
		{name: "upgrade one", method: "PUT", path: "/agents/upgrade?agents_list=001", want: 200},
		{name: "upgrade all to a version", method: "PUT", path: "/agents/upgrade?agents_list=all&upgrade_version=4.9.0", want: 200},
		{name: "upgrade the agents of a node", method: "PUT", path: "/agents/upgrade?agents_list=all&node_name=node01&wait_for_complete=true", want: 200},
		{name: "upgrade manager and unknown", method: "PUT", path: "/agents/upgrade?agents_list=000,999", want: 200},
		{name: "upgrade custom", method: "PUT", path: "/agents/upgrade_custom?agents_list=002&file_path=/var/ossec/test.wpk&installer=upgrade.sh", want: 200},
		{name: "upgrade result", method: "GET", path: "/agents/upgrade_result?agents_list=001,002", want: 200},
		{name: "upgrade result all", method: "GET", path: "/agents/upgrade_result", want: 200},
		{name: "upgrade without agents_list", method: "PUT", path: "/agents/upgrade", want: 400},
		{name: "upgrade custom without file_path", method: "PUT", path: "/agents/upgrade_custom?agents_list=001", want: 400},
		{name: "upgrade bad agents_list", method: "PUT", path: "/agents/upgrade?agents_list=x", want: 400},
		{name: "upgrade bad wpk_repo", method: "PUT", path: "/agents/upgrade?agents_list=001&wpk_repo=a%20b", want: 400},
		{name: "upgrade bad upgrade_version", method: "PUT", path: "/agents/upgrade?agents_list=001&upgrade_version=latest", want: 400},
		{name: "upgrade use_http not a boolean", method: "PUT", path: "/agents/upgrade?agents_list=001&use_http=maybe", want: 400},
		{name: "upgrade force not a boolean", method: "PUT", path: "/agents/upgrade?agents_list=001&force=maybe", want: 400},
		{name: "upgrade bad package_type", method: "PUT", path: "/agents/upgrade?agents_list=001&package_type=zip", want: 400},
		{name: "upgrade custom bad agents_list", method: "PUT", path: "/agents/upgrade_custom?agents_list=x&file_path=/var/ossec/test.wpk", want: 400},
		{name: "upgrade custom bad file_path", method: "PUT", path: "/agents/upgrade_custom?agents_list=001&file_path=/var/ossec/test.txt", want: 400},
		{name: "upgrade custom bad installer", method: "PUT", path: "/agents/upgrade_custom?agents_list=001&file_path=/var/ossec/test.wpk&installer=a%2Ab", want: 400},
		{name: "upgrade result bad agents_list", method: "GET", path: "/agents/upgrade_result?agents_list=1", want: 400},
	}
	bad := []struct{ param, value string }{{"os.platform", "a%2Ab"}, {"os.version", "%2A"}, {"os.name", "a%2Fb"}, {"manager", "%2A"},
		{"version", "%2A"}, {"group", "all"}, {"node_name", "a%20b"}, {"name", "%2A"}, {"ip", "%2A"}, {"registerIP", "%2A"}}
	for _, op := range []struct{ method, path string }{{"PUT", "/agents/upgrade?agents_list=001&"},
		{"PUT", "/agents/upgrade_custom?agents_list=001&file_path=/var/ossec/test.wpk&"}, {"GET", "/agents/upgrade_result?"}} {
		for _, b := range bad {
			cs = append(cs, Case{name: fmt.Sprintf("%s %s bad %s", op.method, strings.Split(op.path, "?")[0], b.param),
				method: op.method, path: op.path + b.param + "=" + b.value, want: 400})
		}
	}
	return cs
}

func init() { Cases = append(Cases, upgradeCases()...) }

// Tally counts the assertions run on one target and those that passed.
type Tally struct{ Passed, Total int }

func (c *Tally) check(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	c.Total++
	if ok {
		c.Passed++
		return
	}
	t.Errorf(format, args...)
}

// Run loads the real specification (skipping where the real Wazuh material is absent, see
// internal/wazuhreal), runs every case against the target as a subtest, and returns the tally.
func Run(t *testing.T, f Target) Tally {
	t.Helper()
	s := loadSpec(t)
	var tally Tally
	router := s.router(t, f.URL)
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	token := login(t, client, f)
	for _, c := range Cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, f.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			switch c.auth {
			case "":
				req.Header.Set("Authorization", "Bearer "+token)
			case "bad-token":
				req.Header.Set("Authorization", "Bearer "+token[:len(token)-4]+"AAAA")
			case "basic":
				req.SetBasicAuth(f.User, f.Pass)
			case "bad-basic":
				req.SetBasicAuth(f.User, f.Pass+"x")
			}
			// What the real validator says about the request.
			route, pathParams, err := router.FindRoute(req)
			if err != nil {
				t.Fatalf("the real API has no operation %s %s: %v", c.method, req.URL.Path, err)
			}
			vreq := req.Clone(context.Background())
			vreq.Body = io.NopCloser(strings.NewReader(c.body))
			in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: pathParams, Route: route, Options: s.options()}
			rejectErr := openapi3filter.ValidateRequest(context.Background(), in)
			if rejectErr == nil {
				rejectErr = extraQueryParams(route, req.URL.Query())
			}
			wantReject := c.want == 400 && c.code == 0
			tally.check(t, (rejectErr != nil) == wantReject, "the real validator rejects the request: %v (case expects rejection: %v)", rejectErr, wantReject)

			if c.fault != "" {
				f.Fault(t, c.fault, true)
				defer f.Fault(t, c.fault, false)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			tally.check(t, resp.StatusCode == c.want, "status %d, the real API answers %d: %s", resp.StatusCode, c.want, body)
			if c.code != 0 {
				var e struct {
					Error int `json:"error"`
				}
				_ = json.Unmarshal(body, &e)
				tally.check(t, e.Error == c.code, "error code %d, the real API answers %d: %s", e.Error, c.code, body)
			}
			// The response against the specification: documented status, body valid for it.
			hdr := resp.Header.Clone()
			if strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") {
				// connexion sends problems as application/problem+json; the specification declares
				// every response application/json. The body is validated against that schema.
				hdr.Set("Content-Type", "application/json")
			}
			rin := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: hdr,
				Body: io.NopCloser(bytes.NewReader(body)), Options: s.options()}
			verr := openapi3filter.ValidateResponse(context.Background(), rin)
			tally.check(t, verr == nil, "response not valid against the real specification: %v\n%s", verr, body)
		})
	}
	return tally
}

// extraQueryParams is connexion's strict_validation (the real API enables it): a query parameter the
// operation does not declare is a 400.
func extraQueryParams(route *routers.Route, q url.Values) error {
	declared := map[string]bool{}
	for _, p := range route.PathItem.Parameters {
		declared[p.Value.Name] = true
	}
	for _, p := range route.Operation.Parameters {
		declared[p.Value.Name] = true
	}
	for k := range q {
		if !declared[k] {
			return fmt.Errorf("extra query parameter %s not in spec", k)
		}
	}
	return nil
}

func login(t *testing.T, client *http.Client, f Target) string {
	t.Helper()
	req, _ := http.NewRequest("POST", f.URL+"/security/user/authenticate", nil)
	req.SetBasicAuth(f.User, f.Pass)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b struct {
		Data struct {
			Token string `json:"token"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil || b.Data.Token == "" {
		t.Fatalf("%s: login: %d %v", f.Name, resp.StatusCode, err)
	}
	return b.Data.Token
}
