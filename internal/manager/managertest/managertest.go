// Package managertest is a fake manager REST API on httptest for tests of
// code that uses internal/manager: JWT login with basic credentials, real
// (HS256) tokens with exp, the affected-items envelope, pagination, per-item
// failures, and faults on demand (rate limiting, daemons not ready, rejected
// tokens). It does not import package manager, so both its internal and
// external tests can use it.
package managertest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Agent is the wire form of an agent (GET /agents item).
type Agent struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	IP            string   `json:"ip,omitempty"`
	RegisterIP    string   `json:"registerIP"`
	Status        string   `json:"status"`
	StatusCode    int      `json:"status_code"`
	Version       string   `json:"version,omitempty"`
	Manager       string   `json:"manager"`
	NodeName      string   `json:"node_name"`
	DateAdd       string   `json:"dateAdd"`
	LastKeepAlive string   `json:"lastKeepAlive"`
	Group         []string `json:"group,omitempty"`
	OS            OS       `json:"os"`
}

// OS is the agent's os object.
type OS struct {
	Name     string `json:"name,omitempty"`
	Platform string `json:"platform,omitempty"`
	Version  string `json:"version,omitempty"`
}

// User is an API user.
type User struct {
	ID         int    `json:"id"`
	Username   string `json:"username"`
	AllowRunAs bool   `json:"allow_run_as"`
	Roles      []int  `json:"roles"`
}

// Config sets up a Server.
type Config struct {
	Username, Password string        // default "wazuh" / "Secr3t.Pass"
	TokenTTL           time.Duration // default 900 s
	Version            string        // default "4.9.0"
	Hostname           string        // default "siem01"
	TLS                bool
	// Now is the server's clock (token exp); default time.Now.
	Now func() time.Time
	// Agents beyond 000 (which is always present).
	Agents []Agent
}

// Server is the fake. Fault counters are consumed one request at a time.
type Server struct {
	*httptest.Server
	cfg    Config
	secret []byte

	mu       sync.Mutex
	agents   []Agent
	users    []User
	daemons  map[string]string
	override map[string]http.HandlerFunc
	// The upgrade module (upgrade.go).
	tasks          map[string]*Task
	nextTask       int
	upgradeOutcome func(agent string) TaskOutcome
	downNodes      map[string]bool

	// Faults: the next N matching requests get the failure.
	RateLimit     atomic.Int32 // 429 / 6001 on any request
	RetryAfter    atomic.Int32 // seconds for the Retry-After header (0: none)
	NotReady      atomic.Int32 // 1017 on any request but GET / and /manager/status (login included)
	RejectTokens  atomic.Int32 // 401 "Invalid token" on bearer requests
	BadConfigNext atomic.Bool  // validation fails with 1908 once

	Logins       atomic.Int32 // successful logins
	Requests     atomic.Int32 // every request, login included
	loginMethods []string
	seen         []string
}

// New starts a fake manager and closes it when the test ends.
func New(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Username == "" {
		cfg.Username = "wazuh"
	}
	if cfg.Password == "" {
		cfg.Password = "Secr3t.Pass"
	}
	if cfg.TokenTTL == 0 {
		cfg.TokenTTL = 900 * time.Second
	}
	if cfg.Version == "" {
		cfg.Version = "4.9.0"
	}
	if cfg.Hostname == "" {
		cfg.Hostname = "siem01"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, secret: make([]byte, 32), override: map[string]http.HandlerFunc{}}
	if _, err := rand.Read(s.secret); err != nil {
		t.Fatal(err)
	}
	s.agents = append([]Agent{{
		ID: "000", Name: cfg.Hostname, IP: "127.0.0.1", RegisterIP: "127.0.0.1", Status: "active",
		Version: "Wazuh v" + cfg.Version, Manager: cfg.Hostname, NodeName: "node01",
		DateAdd: "2025-01-10T08:00:00Z", LastKeepAlive: "9999-12-31T23:59:59Z",
		OS: OS{Name: "Ubuntu", Platform: "ubuntu", Version: "22.04.4 LTS"},
	}}, cfg.Agents...)
	sort.Slice(s.agents, func(i, j int) bool { return s.agents[i].ID < s.agents[j].ID })
	s.users = []User{{ID: 1, Username: "wazuh", AllowRunAs: true, Roles: []int{1}}, {ID: 2, Username: "wazuh-wui", AllowRunAs: true, Roles: []int{1}}}
	s.daemons = map[string]string{}
	for _, d := range []string{"agentlessd", "analysisd", "authd", "csyslogd", "dbd", "monitord", "execd", "integratord",
		"logcollector", "maild", "remoted", "reportd", "syscheckd", "clusterd", "modulesd", "db", "apid"} {
		s.daemons["wazuh-"+d] = "running"
	}
	for _, d := range []string{"agentlessd", "csyslogd", "dbd", "integratord", "maild", "reportd", "clusterd"} {
		s.daemons["wazuh-"+d] = "stopped"
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Server.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake failures are expected in TLS tests
	if cfg.TLS {
		s.Server.StartTLS()
	} else {
		s.Server.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// Username and Password are the valid credentials.
func (s *Server) Username() string { return s.cfg.Username }

// Password is the valid password.
func (s *Server) Password() string { return s.cfg.Password }

// Handle replaces the handler of "METHOD /path" (after authentication).
func (s *Server) Handle(pattern string, h http.HandlerFunc) {
	s.mu.Lock()
	s.override[pattern] = h
	s.mu.Unlock()
}

// SetDaemon sets a daemon's state for /manager/status; a basic daemon (modulesd, analysisd, execd,
// db, remoted) failed, restarting or stopped makes the API answer 1017 as the real one does.
func (s *Server) SetDaemon(name, state string) {
	s.mu.Lock()
	s.daemons[name] = state
	s.mu.Unlock()
}

// LoginMethods returns the HTTP methods used for login, in order.
func (s *Server) LoginMethods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.loginMethods...)
}

// GenerateAgents returns n agents with ids 001… (statuses cycling through
// active, active, disconnected, never_connected).
func GenerateAgents(n int) []Agent {
	out := make([]Agent, 0, n)
	statuses := []string{"active", "active", "disconnected", "never_connected"}
	for i := 1; i <= n; i++ {
		st := statuses[i%len(statuses)]
		a := Agent{ID: fmt.Sprintf("%03d", i), Name: fmt.Sprintf("host-%05d", i), RegisterIP: "any", Status: st,
			Manager: "siem01", NodeName: "node01", DateAdd: "2025-01-11T12:30:05Z", Group: []string{"default"}}
		if st != "never_connected" {
			a.IP = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
			a.Version = "Wazuh v4.9.0"
			a.LastKeepAlive = "2025-03-02T09:14:00Z"
			a.OS = OS{Name: "Debian GNU/Linux", Platform: "debian", Version: "12"}
		}
		out = append(out, a)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	ct := "application/json; charset=utf-8"
	if status >= 400 {
		ct = "application/problem+json; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func problem(w http.ResponseWriter, status int, title, detail string, code int) {
	body := map[string]any{"title": title, "detail": detail}
	if code != 0 {
		body["error"] = code
	}
	writeJSON(w, status, body)
}

type failed struct {
	Error struct {
		Code        int    `json:"code"`
		Message     string `json:"message"`
		Remediation string `json:"remediation"`
	} `json:"error"`
	ID []string `json:"id"`
}

func envelope(w http.ResponseWriter, items any, total int, fails map[int][]string, msgs [3]string) {
	var fl []failed
	codes := make([]int, 0, len(fails))
	for c := range fails {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	nfail := 0
	for _, c := range codes {
		f := failed{ID: fails[c]}
		sort.Strings(f.ID)
		f.Error.Code, f.Error.Message, f.Error.Remediation = c, messages[c], "see the documentation"
		fl = append(fl, f)
		nfail += len(f.ID)
	}
	if fl == nil {
		fl = []failed{}
	}
	status, msg := 0, msgs[0]
	switch {
	case nfail > 0 && total == 0:
		status, msg = 1, msgs[2]
	case nfail > 0:
		status, msg = 2, msgs[1]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"data":    map[string]any{"affected_items": items, "total_affected_items": total, "total_failed_items": nfail, "failed_items": fl},
		"message": msg, "error": status,
	})
}

var messages = map[int]string{
	1701: "Agent does not exist",
	1703: "Action not available for Manager (agent 000)",
	1707: "Cannot send request, agent is not active",
	1731: "Agent is not eligible for the action to be performed",
	5000: "The user could not be created",
	5001: "The user does not exist",
}

// Seen returns "METHOD /path?query" of every request so far, in order.
func (s *Server) Seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// SeenPath returns the raw queries of the requests to "METHOD /path".
func (s *Server) SeenPath(methodPath string) []string {
	var out []string
	for _, x := range s.Seen() {
		mp, q, _ := strings.Cut(x, "?")
		if mp == methodPath {
			out = append(out, q)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	s.mu.Unlock()
	if s.RateLimit.Load() > 0 && s.RateLimit.Add(-1) >= 0 {
		if ra := s.RetryAfter.Load(); ra > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(ra)))
		}
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"title": "Too Many Requests",
			"detail": "Maximum number of requests per minute reached", "remediation": "This limit can be changed in api.yaml file.", "error": 6001})
		return
	}
	if r.URL.Path == "/security/user/authenticate" {
		s.login(w, r)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	key := route(r.Method, r.URL.Path)
	if !s.validParams(w, r, key) {
		return
	}
	if r.URL.Path != "/manager/status" && r.URL.Path != "/" && s.notReady(w) {
		return
	}
	s.mu.Lock()
	h := s.override[r.Method+" "+r.URL.Path]
	s.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	switch key {
	case "GET /":
		writeJSON(w, 200, map[string]any{"data": map[string]any{"title": "Wazuh API REST", "api_version": s.cfg.Version,
			"revision": revision(s.cfg.Version), "license_name": "GPL 2.0", "hostname": s.cfg.Hostname,
			"timestamp": s.cfg.Now().UTC().Format(time.RFC3339)}, "error": 0})
	case "GET /manager/info":
		envelope(w, []any{map[string]any{"path": "/var/ossec", "version": "v" + s.cfg.Version, "type": "server",
			"max_agents": "unlimited", "openssl_support": "yes", "tz_offset": "+0000", "tz_name": "UTC"}}, 1, nil,
			[3]string{"Basic information was successfully read"})
	case "GET /manager/status":
		s.mu.Lock()
		d := map[string]string{}
		for k, v := range s.daemons {
			d[k] = v
		}
		s.mu.Unlock()
		envelope(w, []any{d}, 1, nil, [3]string{"Processes status was successfully read"})
	case "GET /manager/configuration/validation":
		if s.BadConfigNext.CompareAndSwap(true, false) {
			writeJSON(w, 200, map[string]any{"data": map[string]any{"affected_items": []any{}, "total_affected_items": 0,
				"total_failed_items": 1, "failed_items": []any{map[string]any{"error": map[string]any{"code": 1908,
					"message":     "Error validating configuration: (1230): Invalid element in the configuration: 'log_alert_lvl'., (1202): Configuration error at 'etc/ossec.conf'.",
					"remediation": "Please, fix the corrupted files"}, "id": []string{"manager"}}}},
				"message": "Could not check validation", "error": 1})
			return
		}
		envelope(w, []any{map[string]string{"name": "manager", "status": "OK"}}, 1, nil, [3]string{"Validation was successfully checked"})
	case "GET /cluster/status":
		writeJSON(w, 200, map[string]any{"data": map[string]string{"enabled": "no", "running": "no"}, "error": 0})
	case "GET /agents":
		s.getAgents(w, r)
	case "GET /agents/summary/status":
		s.summary(w)
	case "PUT /agents/restart", "PUT /agents/{agent_id}/restart":
		s.restart(w, r)
	case "DELETE /agents":
		s.deleteAgents(w, r)
	case "PUT /agents/upgrade", "PUT /agents/upgrade_custom":
		s.upgrade(w, r)
	case "GET /agents/upgrade_result":
		s.upgradeResult(w, r)
	case "GET /security/users":
		s.mu.Lock()
		us := append([]User(nil), s.users...)
		s.mu.Unlock()
		if ids := splitList(r.URL.Query().Get("user_ids")); ids != nil {
			var picked []User
			fails := map[int][]string{}
			for _, id := range ids {
				found := false
				for _, u := range us {
					if strconv.Itoa(u.ID) == id {
						picked, found = append(picked, u), true
					}
				}
				if !found {
					fails[5001] = append(fails[5001], id)
				}
			}
			if picked == nil {
				picked = []User{}
			}
			envelope(w, picked, len(picked), fails, [3]string{"All specified users were returned", "Some users were not returned", "No user was returned"})
			return
		}
		off, lim := page(r, len(us))
		envelope(w, us[off:lim], len(us), nil, [3]string{"All specified users were returned"})
	case "POST /security/users":
		s.createUser(w, r)
	case "PUT /security/users/{user_id}":
		s.updateUser(w, r)
	default:
		problem(w, http.StatusNotFound, "Not Found", "The requested URL was not found on the server.", 0)
	}
}

func revision(v string) int {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return 0
	}
	a, _ := strconv.Atoi(parts[0])
	b, _ := strconv.Atoi(parts[1])
	c, _ := strconv.Atoi(parts[2])
	return a*10000 + b*100 + c
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.loginMethods = append(s.loginMethods, r.Method)
	s.mu.Unlock()
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		problem(w, http.StatusMethodNotAllowed, "Method Not Allowed", "The method is not allowed for the requested URL.", 0)
		return
	}
	u, p, ok := r.BasicAuth()
	if !ok || u != s.cfg.Username || p != s.cfg.Password {
		problem(w, http.StatusUnauthorized, "Unauthorized", "Invalid credentials", 0)
		return
	}
	if !s.validParams(w, r, r.Method+" /security/user/authenticate") {
		return
	}
	if s.notReady(w) { // login goes through the distributed API too
		return
	}
	now := s.cfg.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "wazuh", "aud": "Wazuh API REST", "nbf": now.Unix(), "exp": now.Add(s.cfg.TokenTTL).Unix(),
		"sub": u, "run_as": false, "rbac_roles": []int{1}, "rbac_mode": "white",
	})
	signed, err := tok.SignedString(s.secret)
	if err != nil {
		problem(w, 500, "Wazuh Internal Error", "cannot sign token", 6003)
		return
	}
	s.Logins.Add(1)
	if r.URL.Query().Get("raw") == "true" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, signed)
		return
	}
	writeJSON(w, 200, map[string]any{"data": map[string]string{"token": signed}, "error": 0})
}

// notReady answers dapi's check_wazuh_status error (a WazuhError: 400, code 1017) while the NotReady
// fault lasts, or while a basic daemon (SetDaemon) is failed, restarting or stopped, naming each one
// with its state in the basic daemons' order. Everything that goes through the distributed API is
// gated, login included; GET / and GET /manager/status are not.
func (s *Server) notReady(w http.ResponseWriter) bool {
	var bad []string
	s.mu.Lock()
	for _, d := range []string{"wazuh-modulesd", "wazuh-analysisd", "wazuh-execd", "wazuh-db", "wazuh-remoted"} {
		switch st := s.daemons[d]; st {
		case "failed", "restarting", "stopped":
			bad = append(bad, d+"->"+st)
		}
	}
	s.mu.Unlock()
	if len(bad) == 0 && s.NotReady.Load() > 0 && s.NotReady.Add(-1) >= 0 {
		bad = []string{"wazuh-modulesd->restarting"}
	}
	if len(bad) == 0 {
		return false
	}
	problem(w, http.StatusBadRequest, "Bad Request",
		`Some Wazuh daemons are not ready yet in node "node01" (`+strings.Join(bad, ", ")+`)`, 1017)
	return true
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header.Get("Authorization")
	raw, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || raw == "" {
		problem(w, http.StatusUnauthorized, "Unauthorized", "No authorization token provided", 0)
		return false
	}
	if s.RejectTokens.Load() > 0 && s.RejectTokens.Add(-1) >= 0 {
		problem(w, http.StatusUnauthorized, "Unauthorized", "Invalid token", 0)
		return false
	}
	_, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return s.secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(s.cfg.Now), jwt.WithAudience("Wazuh API REST"))
	if err != nil {
		problem(w, http.StatusUnauthorized, "Unauthorized", "Invalid token", 0)
		return false
	}
	return true
}

func page(r *http.Request, n int) (int, int) {
	off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	lim, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || lim <= 0 {
		lim = 500
	}
	if off < 0 {
		off = 0
	}
	if off > n {
		off = n
	}
	end := off + lim
	if end > n {
		end = n
	}
	return off, end
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func (s *Server) getAgents(w http.ResponseWriter, r *http.Request) {
	if !frameworkFields(w, r) {
		return
	}
	q := r.URL.Query()
	ids := splitList(q.Get("agents_list"))
	statuses := splitList(q.Get("status"))
	s.mu.Lock()
	var match []Agent
	fails := map[int][]string{}
	if ids != nil {
		byID := map[string]Agent{}
		for _, a := range s.agents {
			byID[a.ID] = a
		}
		for _, id := range ids {
			if a, ok := byID[id]; ok {
				match = append(match, a)
			} else {
				fails[1701] = append(fails[1701], id)
			}
		}
	} else {
		match = s.agents
	}
	s.mu.Unlock()
	if statuses != nil {
		var f []Agent
		for _, a := range match {
			for _, st := range statuses {
				if a.Status == st {
					f = append(f, a)
				}
			}
		}
		match = f
	}
	off, end := page(r, len(match))
	items := match[off:end]
	if items == nil {
		items = []Agent{}
	}
	envelope(w, items, len(match), fails, [3]string{"All selected agents information was returned",
		"Some agents information was not returned", "No agent information was returned"})
}

func (s *Server) summary(w http.ResponseWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := map[string]int{"active": 0, "disconnected": 0, "never_connected": 0, "pending": 0, "total": 0}
	for _, a := range s.agents {
		if a.ID == "000" {
			continue
		}
		c[a.Status]++
		c["total"]++
	}
	writeJSON(w, 200, map[string]any{"data": map[string]any{"connection": c,
		"configuration": map[string]int{"synced": c["total"], "not_synced": 0, "total": c["total"]}}, "error": 0})
}

func (s *Server) restart(w http.ResponseWriter, r *http.Request) {
	ids := splitList(r.URL.Query().Get("agents_list"))
	if id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/agents/"), "/restart"); ok && id != "" && id != r.URL.Path {
		ids = []string{id}
	}
	all := ids == nil
	s.mu.Lock()
	byID := map[string]Agent{}
	for _, a := range s.agents {
		byID[a.ID] = a
		if all {
			ids = append(ids, a.ID)
		}
	}
	s.mu.Unlock()
	affected := []string{}
	fails := map[int][]string{}
	for _, id := range ids {
		a, ok := byID[id]
		switch {
		case id == "000":
			fails[1703] = append(fails[1703], id)
		case !ok:
			fails[1701] = append(fails[1701], id)
		case a.Status != "active":
			fails[1707] = append(fails[1707], id)
		default:
			affected = append(affected, id)
		}
	}
	if all {
		fails = nil // the manager filters 1701/1703/1707 when restarting all
	}
	sort.Strings(affected)
	envelope(w, affected, len(affected), fails, [3]string{"Restart command was sent to all agents",
		"Restart command was not sent to some agents", "Restart command was not sent to any agent"})
}

func (s *Server) deleteAgents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ids := splitList(q.Get("agents_list"))
	if ids == nil || q.Get("status") == "" {
		problem(w, 400, "Bad Request", "'agents_list' and 'status' are required", 0)
		return
	}
	older := q.Get("older_than")
	s.mu.Lock()
	defer s.mu.Unlock()
	affected := []string{}
	fails := map[int][]string{}
	keep := s.agents[:0:0]
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	found := map[string]bool{}
	for _, a := range s.agents {
		switch {
		case !want[a.ID]:
			keep = append(keep, a)
		case a.ID == "000":
			keep = append(keep, a)
			fails[1703] = append(fails[1703], a.ID)
		case (older == "" || older == "7d") && a.Status == "active":
			keep = append(keep, a)
			fails[1731] = append(fails[1731], a.ID)
		default:
			affected = append(affected, a.ID)
		}
		found[a.ID] = true
	}
	for _, id := range ids {
		if !found[id] {
			fails[1701] = append(fails[1701], id)
		}
	}
	s.agents = keep
	envelope(w, affected, len(affected), fails, [3]string{"All selected agents were deleted", "Some agents were not deleted", "No agents were deleted"})
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Username *string `json:"username"`
		Password *string `json:"password"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		problem(w, 400, "Bad Request", "Invalid JSON body", 0)
		return
	}
	var refused string
	switch {
	case body.Username == nil:
		refused = "'username' is a required property"
	case body.Password == nil:
		refused = "'password' is a required property"
	case len(*body.Username) < 4:
		refused = fmt.Sprintf("'%s' is too short", *body.Username)
	case len(*body.Username) > 64:
		refused = fmt.Sprintf("'%s' is too long", *body.Username)
	default:
		refused = checkFormat(kName, *body.Username)
	}
	if refused != "" {
		problem(w, 400, "Bad Request", refused, 0)
		return
	}
	if !passwordOK(w, *body.Password) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.users, func(u User) bool { return u.Username == *body.Username }) {
		envelope(w, []User{}, 0, map[int][]string{5000: {*body.Username}}, [3]string{"User was successfully created", "", "User could not be created"})
		return
	}
	id := 100
	for _, u := range s.users {
		if u.ID >= id {
			id = u.ID + 1
		}
	}
	u := User{ID: id, Username: *body.Username, Roles: []int{}}
	s.users = append(s.users, u)
	envelope(w, []User{u}, 1, nil, [3]string{"User was successfully created"})
}

// passwordOK applies the framework's password policy (5009 length, 5007 character classes).
func passwordOK(w http.ResponseWriter, pw string) bool {
	if n := len(pw); n < 8 || n > 64 {
		writeJSON(w, 400, map[string]any{"title": "Bad Request", "detail": "Insecure user password provided",
			"remediation": "The password must contain a length between 8 and 64 characters.", "error": 5009})
		return false
	}
	var lower, upper, digit, symbol bool
	for _, c := range pw {
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		default:
			symbol = true
		}
	}
	if !lower || !upper || !digit || !symbol {
		writeJSON(w, 400, map[string]any{"title": "Bad Request", "detail": "Insecure user password provided",
			"remediation": "The password for security reasons must have at least 8 characters and at most 64 characters and contain at least one upper and lower case letter, a number and a symbol.", "error": 5007})
		return false
	}
	return true
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/security/users/")
	var body struct {
		Password *string `json:"password"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		problem(w, 400, "Bad Request", "Invalid JSON body", 0)
		return
	}
	if body.Password == nil {
		problem(w, 400, "Bad Request", "The body of the request is empty, you must specify what you want to modify", 4001)
		return
	}
	if !passwordOK(w, *body.Password) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.IndexFunc(s.users, func(u User) bool { return strconv.Itoa(u.ID) == id }); i >= 0 {
		envelope(w, []User{s.users[i]}, 1, nil, [3]string{"User was successfully updated"})
		return
	}
	envelope(w, []User{}, 0, map[int][]string{5001: {id}}, [3]string{"User was successfully updated", "", "User could not be updated"})
}

// SetAgentStatus changes agent id's status as the manager would when it
// (dis)connects; a disconnected agent keeps lastKeepAlive (its last contact).
func (s *Server) SetAgentStatus(id, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	codes := map[string]int{"active": 0, "pending": 1, "never_connected": 2, "disconnected": 3}
	for i := range s.agents {
		if s.agents[i].ID == id {
			s.agents[i].Status, s.agents[i].StatusCode = status, codes[status]
		}
	}
}
