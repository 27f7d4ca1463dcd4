package manager

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/siemctl/siemctl/lab/emu/faults"
)

const (
	jwtIssuer   = "wazuh"
	jwtAudience = "Wazuh API REST"
	problemType = "application/problem+json; charset=utf-8"
)

// APIOptions configures an API server.
type APIOptions struct {
	Home     Home
	Config   *APIConfig
	Logger   *slog.Logger
	Now      func() time.Time
	Faults   faults.Checker
	Hostname string
	SignKey  *ecdsa.PrivateKey
	// Sleep waits for d or until ctx ends (api-slow fault); nil uses a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// TokenTTL is auth_token_exp_timeout (default 900 s).
	TokenTTL time.Duration
	// Started is when the daemon started (agents-no-reconnect).
	Started time.Time
	// Cluster is this node's wazuh-clusterd (nil: cluster disabled; see clusterapi.go).
	Cluster *ClusterDaemon
}

// APIServer is the manager REST API.
type APIServer struct {
	o      APIOptions
	agents *AgentStore
	users  *UserStore
	mux    *http.ServeMux
	// upgrades is the agent upgrade module (upgrade.go).
	upgrades *upgradeModule
	apiLog   apiLog // logs/api.log (apilog.go)

	rlMu      sync.Mutex
	rlStart   time.Time
	rlCount   int
	loginMu   sync.Mutex
	loginFail map[string][]time.Time
}

// NewAPIServer builds the handler.
func NewAPIServer(o APIOptions) *APIServer {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Config == nil {
		o.Config, _ = LoadAPIConfig("")
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = 900 * time.Second
	}
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	s := &APIServer{o: o, agents: NewAgentStore(o.Home), users: NewUserStore(o.Home), loginFail: map[string][]time.Time{}, upgrades: newUpgradeModule()}
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.handleRoot)
	m.HandleFunc("POST /security/user/authenticate", s.handleLogin)
	m.HandleFunc("GET /security/user/authenticate", s.handleLogin)
	m.HandleFunc("GET /agents", s.handleGetAgents)
	m.HandleFunc("DELETE /agents", s.handleDeleteAgents)
	m.HandleFunc("GET /agents/summary/status", s.handleSummary)
	m.HandleFunc("PUT /agents/restart", s.handleRestart)
	m.HandleFunc("PUT /agents/{agent_id}/restart", s.handleRestart)
	m.HandleFunc("PUT /agents/upgrade", s.handleUpgrade)
	m.HandleFunc("PUT /agents/upgrade_custom", s.handleUpgrade)
	m.HandleFunc("GET /agents/upgrade_result", s.handleUpgradeResult)
	m.HandleFunc("GET /manager/info", s.handleManagerInfo)
	m.HandleFunc("GET /manager/status", s.handleManagerStatus)
	m.HandleFunc("GET /manager/configuration/validation", s.handleValidation)
	m.HandleFunc("GET /cluster/status", s.handleClusterStatus)
	s.clusterRoutes(m)
	m.HandleFunc("GET /security/users", s.handleGetUsers)
	m.HandleFunc("POST /security/users", s.handleCreateUser)
	m.HandleFunc("PUT /security/users/{user_id}", s.handleUpdateUser)
	s.mux = m
	return s
}

// ---- responses ----

type problem struct {
	Title       string `json:"title"`
	Detail      string `json:"detail"`
	Remediation string `json:"remediation,omitempty"`
	Error       int    `json:"error,omitempty"`
	DAPIErrors  any    `json:"dapi_errors,omitempty"`
}

var problemTitles = map[int]string{400: "Bad Request", 401: "Unauthorized", 403: "Permission Denied", 404: "Resource Not Found",
	405: "Method Not Allowed", 429: "Too Many Requests", 500: "Wazuh Internal Error"}

func writeProblem(w http.ResponseWriter, status int, p problem) {
	if p.Title == "" {
		p.Title = problemTitles[status]
	}
	b, _ := marshalNoEscape(p)
	w.Header().Set("Content-Type", problemType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := marshalNoEscape(v)
	if err != nil {
		writeProblem(w, 500, problem{Detail: "internal error encoding response", Error: 1000})
		return
	}
	writeBody(w, r, status, b)
}

func writeBody(w http.ResponseWriter, r *http.Request, status int, b []byte) {
	if v := queryOf(r).Get("pretty"); v == "true" {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "   ") == nil {
			b = out.Bytes()
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// wazuhError is a framework error code with its message and remediation.
type wazuhError struct {
	Code        int    `json:"code"`
	Message     string `json:"message"`
	Remediation string `json:"remediation,omitempty"`
}

var errorCatalog = map[int]wazuhError{
	1403: {Message: "Not a valid sort field ", Remediation: "Please, use only allowed sort fields"},
	1407: {Message: "Query does not match expected format", Remediation: "Please, visit the official documentation (https://documentation.wazuh.com/4.9/user-manual/api/queries.html) to get more information about queries"},
	1408: {Message: "Field does not exist."},
	1409: {Message: "Invalid query operator"},
	2003: {Message: "Error in wazuhdb request"},
	1701: {Message: "Agent does not exist", Remediation: "Please, use `GET /agents?select=id,name` to find all available agents"},
	1703: {Message: "Action not available for Manager (agent 000)", Remediation: "Please, use `GET /agents?select=id,name` to find all available agents and make sure you select an agent other than 000"},
	1707: {Message: "Cannot send request, agent is not active", Remediation: "Please, check non-active agents connection and try again. Visit https://documentation.wazuh.com/4.9/user-manual/registering/index.html and https://documentation.wazuh.com/4.9/user-manual/agents/agent-connection.html to obtain more information on registering and connecting agents"},
	1724: {Message: "Not a valid select field", Remediation: "Use a valid field."},
	1726: {Message: "Wazuh authd is not running", Remediation: "Please enable authd or check if there is any error"},
	1731: {Message: "Agent is not eligible for the action to be performed", Remediation: "Please, make sure the agent meets the requirements."},
	1908: {Message: "Error validating configuration", Remediation: "Please, fix the corrupted files"},
	5000: {Message: "The user could not be created", Remediation: "Please check that the user does not exist, to do this you can use the `GET /security/users` endpoint"},
	5001: {Message: "The user does not exist", Remediation: "The user can be created, for more information please visit: https://documentation.wazuh.com/4.9/user-manual/api/rbac/reference.html#add-user"},
	5007: {Message: "Insecure user password provided", Remediation: "The password for security reasons must have at least 8 characters and at most 64 characters and contain at least one upper and lower case letter, a number and a symbol."},
	5009: {Message: "Insecure user password provided", Remediation: "The password must contain a length between 8 and 64 characters."},
}

func werr(code int, extra string) wazuhError {
	e := errorCatalog[code]
	e.Code = code
	if extra != "" {
		e.Message += ": " + extra
	}
	return e
}

func writeWazuhError(w http.ResponseWriter, status int, code int, extra string) {
	e := werr(code, extra)
	writeProblem(w, status, problem{Detail: e.Message, Remediation: e.Remediation, Error: code})
}

type failedItem struct {
	Error wazuhError `json:"error"`
	ID    []any      `json:"id"`
}

type affectedData struct {
	AffectedItems      any          `json:"affected_items"`
	TotalAffectedItems int          `json:"total_affected_items"`
	TotalFailedItems   int          `json:"total_failed_items"`
	FailedItems        []failedItem `json:"failed_items"`
}

type affectedResult struct {
	Data    affectedData `json:"data"`
	Message string       `json:"message"`
	Error   int          `json:"error"`
}

// failures collects per-item errors, grouped per distinct error, sorted by code, ids sorted.
type failures struct {
	groups map[string]*failedItem
	count  int
}

func (f *failures) add(e wazuhError, id any) {
	if f.groups == nil {
		f.groups = map[string]*failedItem{}
	}
	k := strconv.Itoa(e.Code) + "\x00" + e.Message
	g, ok := f.groups[k]
	if !ok {
		g = &failedItem{Error: e}
		f.groups[k] = g
	}
	g.ID = append(g.ID, id)
	f.count++
}

// idLess orders ids as the real API lists them: numbers by value ("999" before "1000"), else as text.
func idLess(a, b string) bool {
	if idRe.MatchString(a) && idRe.MatchString(b) && len(a) != len(b) {
		return len(strings.TrimLeft(a, "0")) < len(strings.TrimLeft(b, "0")) ||
			(len(strings.TrimLeft(a, "0")) == len(strings.TrimLeft(b, "0")) && strings.TrimLeft(a, "0") < strings.TrimLeft(b, "0"))
	}
	return a < b
}

func (f *failures) items() []failedItem {
	out := make([]failedItem, 0, len(f.groups))
	for _, g := range f.groups {
		sort.Slice(g.ID, func(i, j int) bool { return idLess(fmt.Sprint(g.ID[i]), fmt.Sprint(g.ID[j])) })
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Error.Code != out[j].Error.Code {
			return out[i].Error.Code < out[j].Error.Code
		}
		return out[i].Error.Message < out[j].Error.Message
	})
	return out
}

func envelopeCode(affected, failed int) int {
	switch {
	case failed == 0:
		return 0
	case affected == 0:
		return 1
	}
	return 2
}

func resultMessage(affected, failed int, all, some, none string) string {
	switch {
	case affected == 0:
		return none
	case failed == 0:
		return all
	}
	return some
}

func affected(items any, n int, f *failures, all, some, none string) affectedResult {
	return affectedResult{
		Data:    affectedData{AffectedItems: items, TotalAffectedItems: n, TotalFailedItems: f.count, FailedItems: f.items()},
		Message: resultMessage(n, f.count, all, some, none),
		Error:   envelopeCode(n, f.count),
	}
}

// ---- middleware ----

// ServeHTTP applies the API's middleware chain (route check, rate limit, faults, auth, readiness).
func (s *APIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start, user := time.Now(), ""
	sw := &statusWriter{ResponseWriter: w}
	w = sw
	defer func() { s.apiLog.write(s.o.Home, s.o.Now(), user, r, sw.status, time.Since(start)) }()
	_, pattern := s.mux.Handler(r)
	if pattern == "" {
		for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
			rr := r.Clone(r.Context())
			rr.Method = m
			if _, p := s.mux.Handler(rr); p != "" && m != r.Method {
				writeProblem(w, 405, problem{Detail: "Method Not Allowed"})
				return
			}
		}
		writeProblem(w, 404, problem{Title: "Not Found", Detail: "404: Not Found"})
		return
	}
	if s.o.Faults.Active(faults.APIRateLimit) || !s.allowRequest() {
		writeProblem(w, 429, problem{Detail: "Maximum number of requests per minute reached",
			Remediation: "This limit can be changed in api.yaml file. More information here: https://documentation.wazuh.com/4.9/user-manual/api/security/configuration.html", Error: 6001})
		return
	}
	if s.o.Faults.Active(faults.APISlow) {
		if err := s.o.Sleep(r.Context(), 3*time.Second); err != nil {
			return
		}
	}
	if strings.HasPrefix(r.URL.Path, "/security/user/authenticate") {
		user, _, _ = r.BasicAuth()
		s.mux.ServeHTTP(w, r)
		return
	}
	var ok bool
	user, ok = s.authenticateBearer(w, r)
	if !ok {
		return
	}
	// dapi's check_wazuh_status gates what goes through the distributed API: not GET / (answered by
	// the API process itself) nor /manager/status.
	if r.URL.Path != "/manager/status" && r.URL.Path != "/" && !s.ready(w) {
		return
	}
	s.o.Logger.Debug("request", "user", user, "method", r.Method, "path", r.URL.Path)
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
}

type userKey struct{}

func (s *APIServer) allowRequest() bool {
	limit := s.o.Config.Access.MaxRequestPerMinute
	if limit <= 0 {
		return true
	}
	now := s.o.Now()
	s.rlMu.Lock()
	defer s.rlMu.Unlock()
	if s.rlStart.IsZero() || now.Sub(s.rlStart) > time.Minute {
		s.rlStart, s.rlCount = now, 0
	}
	s.rlCount++
	return s.rlCount <= limit
}

// ready answers like dapi check_wazuh_status (framework/wazuh/core/cluster/dapi/dapi.py): any basic
// daemon failed, restarting or stopped is error 1017 naming each one with its state, in the basic
// daemons' order. (1018 and 1019 are unrelated codes in 4.x: invalid JSON body, backup file.)
func (s *APIServer) ready(w http.ResponseWriter) bool {
	states := DaemonStates(s.o.Home)
	node := "node01"
	if c, err := s.loadConfig(); err == nil {
		node = c.NodeName
	}
	var bad []string
	for _, d := range basicDaemons {
		switch st := states[d]; st {
		case "failed", "restarting", "stopped":
			bad = append(bad, d+"->"+st)
		}
	}
	if len(bad) == 0 {
		return true
	}
	detail := fmt.Sprintf("Some Wazuh daemons are not ready yet in node \"%s\" (%s)", node, strings.Join(bad, ", "))
	writeProblem(w, 400, problem{Detail: detail, Error: 1017,
		DAPIErrors: map[string]any{node: map[string]string{"error": detail, "logfile": "WAZUH_HOME/logs/api.log"}}})
	return false
}

func (s *APIServer) loadConfig() (*Config, error) {
	b, err := os.ReadFile(s.o.Home.OssecConf())
	if err != nil {
		return nil, fmt.Errorf("read ossec.conf: %w", err)
	}
	return ParseConfig(b)
}

func (s *APIServer) authenticateBearer(w http.ResponseWriter, r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		writeProblem(w, 401, problem{Detail: "No authorization token provided"})
		return "", false
	}
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		writeProblem(w, 401, problem{Detail: "No authorization token provided"})
		return "", false
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(strings.TrimSpace(tok), claims, func(t *jwt.Token) (any, error) {
		return &s.o.SignKey.PublicKey, nil
	}, jwt.WithValidMethods([]string{"ES512"}), jwt.WithIssuer(jwtIssuer), jwt.WithAudience(jwtAudience),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(s.o.Now))
	if err != nil {
		writeProblem(w, 401, problem{Detail: "Invalid token"})
		return "", false
	}
	sub, _ := claims.GetSubject()
	nbf, _ := claims.GetNotBefore()
	u := s.users.Lookup(sub)
	if u == nil || nbf == nil || nbf.Unix() < u.TokensValidAfter {
		writeProblem(w, 401, problem{Detail: "Invalid token"})
		return "", false
	}
	return sub, true
}

func clientIP(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

func (s *APIServer) blocked(ip string, now time.Time) bool {
	s.loginMu.Lock()
	defer s.loginMu.Unlock()
	win := time.Duration(s.o.Config.Access.BlockTime) * time.Second
	var keep []time.Time
	for _, t := range s.loginFail[ip] {
		if now.Sub(t) < win {
			keep = append(keep, t)
		}
	}
	s.loginFail[ip] = keep
	return s.o.Config.Access.MaxLoginAttempts > 0 && len(keep) >= s.o.Config.Access.MaxLoginAttempts
}

func (s *APIServer) recordLoginFailure(ip string, now time.Time) {
	s.loginMu.Lock()
	defer s.loginMu.Unlock()
	s.loginFail[ip] = append(s.loginFail[ip], now)
}

// ---- handlers ----

func (s *APIServer) handleLogin(w http.ResponseWriter, r *http.Request) {
	now := s.o.Now()
	ip := clientIP(r)
	if s.blocked(ip, now) {
		writeProblem(w, 403, problem{Detail: "Limit of login attempts reached. The current IP has been blocked due to a high number of login attempts", Error: 6000})
		return
	}
	name, pw, ok := r.BasicAuth()
	if !ok {
		writeProblem(w, 401, problem{Detail: "No authorization token provided"})
		return
	}
	u, ok := s.users.Authenticate(name, pw)
	if !ok {
		s.recordLoginFailure(ip, now)
		writeProblem(w, 401, problem{Detail: "Invalid credentials"})
		return
	}
	if !checkParams(w, r, "raw") {
		return
	}
	if !s.ready(w) {
		return
	}
	iat := now.Unix()
	claims := jwt.MapClaims{
		"iss": jwtIssuer, "aud": jwtAudience, "nbf": iat, "exp": iat + int64(s.o.TokenTTL/time.Second),
		"sub": u.Username, "run_as": false, "rbac_roles": u.Roles, "rbac_mode": "white",
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodES512, claims).SignedString(s.o.SignKey)
	if err != nil {
		writeProblem(w, 500, problem{Detail: "Error loading the JWT secret", Error: 6003})
		return
	}
	if queryOf(r).Get("raw") == "true" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(200)
		_, _ = w.Write([]byte(tok))
		return
	}
	writeJSON(w, r, 200, orderedObject{{"data", orderedObject{{"token", tok}}}, {"error", 0}})
}

func (s *APIServer) version() Version {
	v, err := s.o.Home.ReadVersion()
	if err != nil {
		return Version{Tag: "v0.0.0"}
	}
	return v
}

func (s *APIServer) handleRoot(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	v := s.version()
	writeJSON(w, r, 200, orderedObject{{"data", orderedObject{
		{"title", "Wazuh API REST"}, {"api_version", v.Plain()}, {"revision", v.Revision},
		{"license_name", "GPL 2.0"}, {"license_url", "https://github.com/wazuh/wazuh/blob/" + v.Tag + "/LICENSE"},
		{"hostname", s.o.Hostname}, {"timestamp", s.o.Now().UTC().Format(agentTimeFormat)},
	}}, {"error", 0}})
}

func (s *APIServer) viewCtx(agents []*Agent) *viewCtx {
	c := &viewCtx{now: s.o.Now(), hostname: s.o.Hostname, nodeName: "node01", managerVersion: s.version().Tag}
	if conf, err := s.loadConfig(); err == nil {
		c.nodeName = conf.NodeName
	}
	c.discSince, c.disconnected = s.o.Faults.Since(faults.AgentsDisconnected)
	if since, on := s.o.Faults.Since(faults.AgentsNoReconnect); on && !s.o.Started.IsZero() && s.o.Started.After(since) {
		c.notBack, c.startedAt = notReconnecting(agents), s.o.Started
	}
	if s.o.Faults.Active(faults.AgentNewer) {
		for _, a := range agents {
			if a.ID > 0 && a.Conn == StatusActive {
				c.newerID = a.ID
				break
			}
		}
	}
	return c
}

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

func (s *APIServer) handleGetAgents(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	params := []string{"agents_list", "offset", "limit", "select", "sort", "search", "status", "q", "older_than", "distinct"}
	for p := range agentFilterParams {
		params = append(params, p)
	}
	if !checkParams(w, r, params...) {
		return
	}
	offset, limit, ok := parsePage(w, q)
	if !ok {
		return
	}
	ids, _, ok := parseIDList(w, first(q, "agents_list"), false)
	if !ok {
		return
	}
	var sel map[string]bool
	if v := first(q, "select"); v != "" {
		sel = map[string]bool{}
		for _, f := range strings.Split(v, ",") {
			if !validField(f) {
				writeWazuhError(w, 400, 1724, fmt.Sprintf("Allowed select fields: %s. Fields: %s", strings.Join(agentFields, ", "), f))
				return
			}
			sel[f] = true
		}
	}
	type sortKey struct {
		field string
		desc  bool
	}
	var sorts []sortKey
	if v := first(q, "sort"); v != "" {
		for _, f := range strings.Split(v, ",") {
			k := sortKey{field: strings.TrimLeft(f, "+- "), desc: strings.HasPrefix(f, "-")}
			if !validField(k.field) {
				writeWazuhError(w, 400, 1403, fmt.Sprintf("Allowed sort fields: %s. Fields: %s", strings.Join(agentFields, ", "), k.field))
				return
			}
			sorts = append(sorts, k)
		}
	}
	filter, ok := s.parseFilter(w, q, false)
	if !ok {
		return
	}
	agents, ok := s.loadAgents(w)
	if !ok {
		return
	}
	c := s.viewCtx(agents)
	var fails failures
	var matched []*Agent
	if ids != nil {
		byID := indexAgents(agents)
		seen := map[int]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			a, ok := byID[id]
			if !ok {
				fails.add(werr(1701, ""), fmt.Sprintf("%03d", id))
				continue
			}
			if filter.match(c, a) {
				matched = append(matched, a)
			}
		}
		sort.Slice(matched, func(i, j int) bool { return matched[i].ID < matched[j].ID })
	} else {
		matched = make([]*Agent, 0, min(len(agents), 1024))
		for _, a := range agents {
			if filter.match(c, a) {
				matched = append(matched, a)
			}
		}
	}
	if len(sorts) > 0 {
		type skey struct {
			s   string
			n   float64
			num bool
		}
		keys := make([][]skey, len(matched))
		for i, a := range matched {
			ks := make([]skey, len(sorts))
			for j, sk := range sorts {
				switch sk.field {
				case "id":
					ks[j] = skey{n: float64(a.ID), num: true}
				case "lastKeepAlive":
					ks[j] = skey{n: float64(c.lastKeepAlive(a)), num: true}
				case "dateAdd":
					ks[j] = skey{n: float64(a.DateAdd), num: true}
				default:
					ks[j] = skey{s: c.field(a, sk.field)}
				}
			}
			keys[i] = ks
		}
		idx := make([]int, len(matched))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(x, y int) bool {
			ki, kj := keys[idx[x]], keys[idx[y]]
			for n, sk := range sorts {
				cmp := 0
				switch {
				case ki[n].num && ki[n].n < kj[n].n:
					cmp = -1
				case ki[n].num && ki[n].n > kj[n].n:
					cmp = 1
				case !ki[n].num && sk.field == "version":
					cmp = compareVersions(ki[n].s, kj[n].s)
				case !ki[n].num:
					cmp = strings.Compare(ki[n].s, kj[n].s)
				}
				if cmp != 0 {
					return (cmp < 0) != sk.desc
				}
			}
			return false
		})
		sorted := make([]*Agent, len(matched))
		for i, j := range idx {
			sorted[i] = matched[j]
		}
		matched = sorted
	}
	total := len(matched)
	page := matched[min(offset, total):min(offset+limit, total)]
	body := make([]byte, 0, 256+len(page)*400)
	body = append(body, `{"data":{"affected_items":[`...)
	for i, a := range page {
		if i > 0 {
			body = append(body, ',')
		}
		body = c.appendAgentJSON(body, a, sel)
	}
	fb, _ := marshalNoEscape(fails.items())
	body = fmt.Appendf(body, `],"total_affected_items":%d,"total_failed_items":%d,"failed_items":%s},"message":%q,"error":%d}`,
		total, fails.count, fb,
		resultMessage(total, fails.count, "All selected agents information was returned", "Some agents information was not returned", "No agent information was returned"),
		envelopeCode(total, fails.count))
	writeBody(w, r, 200, body)
}

func indexAgents(agents []*Agent) map[int]*Agent {
	m := make(map[int]*Agent, len(agents))
	for _, a := range agents {
		m[a.ID] = a
	}
	return m
}

func (s *APIServer) handleSummary(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	agents, ok := s.loadAgents(w)
	if !ok {
		return
	}
	c := s.viewCtx(agents)
	counts := map[string]int{}
	synced, total := 0, 0
	for _, a := range agents {
		if a.ID == 0 {
			continue
		}
		total++
		counts[c.status(a)]++
		if a.Synced {
			synced++
		}
	}
	writeJSON(w, r, 200, orderedObject{{"data", orderedObject{
		{"connection", orderedObject{{"active", counts[StatusActive]}, {"disconnected", counts[StatusDisconnected]},
			{"never_connected", counts[StatusNeverConnected]}, {"pending", counts[StatusPending]}, {"total", total}}},
		{"configuration", orderedObject{{"synced", synced}, {"not_synced", total - synced}, {"total", total}}},
	}}, {"error", 0}})
}

func (s *APIServer) handleRestart(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	var ids []int
	explicit := false
	if pid := r.PathValue("agent_id"); pid != "" {
		if !checkParams(w, r) {
			return
		}
		l, _, ok := parseIDList(w, pid, false)
		if !ok {
			return
		}
		ids, explicit = l, true
	} else {
		if !checkParams(w, r, "agents_list") {
			return
		}
		l, _, ok := parseIDList(w, first(q, "agents_list"), false)
		if !ok {
			return
		}
		ids, explicit = l, l != nil
	}
	agents, ok := s.loadAgents(w)
	if !ok {
		return
	}
	c := s.viewCtx(agents)
	byID := indexAgents(agents)
	if !explicit {
		ids = ids[:0]
		for _, a := range agents {
			ids = append(ids, a.ID)
		}
	}
	var fails failures
	done := []string{}
	fail := func(code int, sid string) {
		if explicit {
			fails.add(werr(code, ""), sid)
		}
	}
	eachRequested(ids, byID, fail, func(sid string, a *Agent) {
		if c.status(a) != StatusActive {
			fail(1707, sid)
			return
		}
		done = append(done, sid)
	})
	sort.Strings(done)
	if len(done) > 0 {
		s.o.Logger.Info("restart command sent", "agents", len(done))
	}
	writeJSON(w, r, 200, affected(done, len(done), &fails, "Restart command was sent to all agents",
		"Restart command was not sent to some agents", "Restart command was not sent to any agent"))
}

// eachRequested walks the distinct agent ids of a request in their order: the manager (000) goes to
// fail with the real API's 1703, an unknown id with 1701, every other agent to ok.
func eachRequested(ids []int, byID map[int]*Agent, fail func(code int, sid string), ok func(sid string, a *Agent)) {
	seen := map[int]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		sid := fmt.Sprintf("%03d", id)
		a, found := byID[id]
		switch {
		case id == 0:
			fail(1703, sid)
		case !found:
			fail(1701, sid)
		default:
			ok(sid, a)
		}
	}
}

func (s *APIServer) handleDeleteAgents(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	// DELETE /agents declares neither search nor group_config_status.
	params := []string{"agents_list", "status", "older_than", "purge", "q"}
	for p := range agentFilterParams {
		if p != "group_config_status" {
			params = append(params, p)
		}
	}
	if !checkParams(w, r, params...) {
		return
	}
	if _, ok := q["agents_list"]; !ok {
		badParam(w, "Missing query parameter 'agents_list'")
		return
	}
	if _, ok := q["status"]; !ok {
		badParam(w, "Missing query parameter 'status'")
		return
	}
	ids, all, ok := parseIDList(w, first(q, "agents_list"), true)
	if !ok {
		return
	}
	if !all && len(ids) == 0 {
		badParam(w, "[] is too short")
		return
	}
	if _, ok := q["older_than"]; !ok {
		q.Set("older_than", "7d")
	}
	purge := first(q, "purge") == "true"
	filter, ok := s.parseFilter(w, q, true)
	if !ok {
		return
	}
	if conf, err := s.loadConfig(); err == nil && conf.AuthDisabled {
		writeWazuhError(w, 400, 1726, "")
		return
	}
	var fails failures
	var removed []*Agent
	extra := fmt.Sprintf("some of the requirements are not met -> older_than: %s, status: %s", first(q, "older_than"), pyList(filter.status))
	err := s.agents.Update(func(cur []*Agent) ([]*Agent, bool, error) {
		c := s.viewCtx(cur)
		byID := indexAgents(cur)
		del := map[int]bool{}
		if all {
			for _, a := range cur {
				if a.ID != 0 && filter.match(c, a) {
					del[a.ID] = true
				}
			}
		} else {
			fail := func(code int, sid string) { fails.add(werr(code, ""), sid) }
			eachRequested(ids, byID, fail, func(sid string, a *Agent) {
				if !filter.match(c, a) {
					fails.add(werr(1731, extra), sid)
					return
				}
				del[a.ID] = true
			})
		}
		if len(del) == 0 {
			return nil, false, nil
		}
		next := make([]*Agent, 0, len(cur)-len(del))
		for _, a := range cur {
			if del[a.ID] {
				removed = append(removed, a)
			} else {
				next = append(next, a)
			}
		}
		return next, true, nil
	})
	if err != nil {
		s.o.Logger.Error("delete agents", "err", err)
		writeProblem(w, 500, problem{Detail: "Error deleting an agent", Error: 1757})
		return
	}
	if !purge {
		if err := markRemoved(s.o.Home.ClientKeys(), removed); err != nil {
			s.o.Logger.Error("client.keys", "err", err)
		}
	}
	done := make([]string, 0, len(removed))
	for _, a := range removed {
		done = append(done, a.IDString())
	}
	sort.Strings(done)
	writeJSON(w, r, 200, affected(done, len(done), &fails, "All selected agents were deleted", "Some agents were not deleted", "No agents were deleted"))
}

func pyList(v []string) string {
	if len(v) == 0 {
		return "None"
	}
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func (s *APIServer) handleManagerInfo(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	now := s.o.Now()
	name, off := now.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	item := orderedObject{{"path", s.o.Home.Dir}, {"version", s.version().Tag}, {"type", "server"},
		{"max_agents", "unlimited"}, {"openssl_support", "yes"},
		{"tz_offset", fmt.Sprintf("%c%02d%02d", sign, off/3600, off%3600/60)}, {"tz_name", name}}
	writeJSON(w, r, 200, affected([]any{item}, 1, &failures{}, "Basic information was successfully read", "", "Could not read basic information"))
}

func (s *APIServer) handleManagerStatus(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	states := DaemonStates(s.o.Home)
	item := orderedObject{}
	for _, d := range apiDaemons {
		item = append(item, kvAny{d, states[d]})
	}
	writeJSON(w, r, 200, affected([]any{item}, 1, &failures{}, "Processes status was successfully read", "", "Could not read basic information"))
}

// ValidateInstall runs the configuration test the daemons run with -t (ossec.conf and local rules).
func ValidateInstall(h Home) error {
	b, err := os.ReadFile(h.OssecConf())
	if err != nil {
		return &ConfigError{Lines: []string{confDaemon + ": ERROR: (1103): Could not open file '" + confRelPath + "' due to [(2)-(No such file or directory)].",
			confDaemon + ": CRITICAL: (1202): Configuration error at '" + confRelPath + "'."}}
	}
	if _, err := ParseConfig(b); err != nil {
		return err
	}
	local, err := LoadLocalRules(h.LocalRules(), "etc/rules/local_rules.xml")
	if err != nil {
		return err
	}
	if _, err := NewRuleset(local); err != nil {
		return &ConfigError{Lines: []string{confDaemon + ": ERROR: (1220): Error loading the rules: " + err.Error() + ".",
			confDaemon + ": CRITICAL: (1220): Error loading the rules: 'etc/rules/local_rules.xml'."}}
	}
	return nil
}

func (s *APIServer) handleValidation(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	var fails failures
	items := []any{}
	if err := ValidateInstall(s.o.Home); err != nil {
		var ce *ConfigError
		msg := err.Error()
		if errors.As(err, &ce) {
			msg = strings.Join(ce.Messages(), ", ")
		}
		fails.add(werr(1908, msg), "manager")
	} else {
		items = append(items, orderedObject{{"name", "manager"}, {"status", "OK"}})
	}
	writeJSON(w, r, 200, affected(items, len(items), &fails, "Validation was successfully checked", "", "Could not check validation"))
}

func (s *APIServer) handleClusterStatus(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	enabled, running := "no", "no"
	if c, err := s.loadConfig(); err == nil && !c.ClusterDisabled {
		enabled = "yes"
	}
	if s.o.Cluster != nil {
		running = "yes"
	}
	writeJSON(w, r, 200, orderedObject{{"data", orderedObject{{"enabled", enabled}, {"running", running}}}, {"error", 0}})
}

func userItem(u *APIUser) orderedObject {
	roles := u.Roles
	if roles == nil {
		roles = []int{}
	}
	return orderedObject{{"id", u.ID}, {"username", u.Username}, {"allow_run_as", u.AllowRunAs}, {"roles", roles}}
}

func (s *APIServer) handleGetUsers(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	if !checkParams(w, r, "user_ids", "offset", "limit", "search", "select", "sort", "q", "distinct") {
		return
	}
	offset, limit, ok := parsePage(w, q)
	if !ok {
		return
	}
	users, err := s.users.Users()
	if err != nil {
		writeProblem(w, 500, problem{Detail: "Error reading the users database", Error: 2008})
		return
	}
	var fails failures
	var picked []*APIUser
	if v := first(q, "user_ids"); v != "" {
		for _, p := range strings.Split(v, ",") {
			id, err := strconv.Atoi(p)
			if err != nil {
				badParam(w, fmt.Sprintf("'%s' is not of type 'integer'", p))
				return
			}
			found := false
			for _, u := range users {
				if u.ID == id {
					picked, found = append(picked, u), true
				}
			}
			if !found {
				fails.add(werr(5001, ""), id)
			}
		}
	} else {
		picked = users
	}
	sort.SliceStable(picked, func(i, j int) bool { return picked[i].ID < picked[j].ID })
	if v := first(q, "q"); v != "" {
		n, ok := queryParam(w, v, func(f string) bool { return slices.Contains([]string{"id", "username", "allow_run_as", "roles"}, f) })
		if !ok {
			return
		}
		var keep []*APIUser
		for _, u := range picked {
			if n.matchValues(func(f string) string { return userValue(u, f) }) {
				keep = append(keep, u)
			}
		}
		picked = keep
	}
	if v := strings.ToLower(first(q, "search")); v != "" {
		// "-x" is the complementary search: users matching nothing of x.
		neg := strings.HasPrefix(v, "-")
		v = strings.TrimPrefix(v, "-")
		var keep []*APIUser
		for _, u := range picked {
			hit := strings.Contains(strings.ToLower(u.Username), v) || strings.Contains(strconv.Itoa(u.ID), v)
			if hit != neg {
				keep = append(keep, u)
			}
		}
		picked = keep
	}
	total := len(picked)
	page := picked[min(offset, total):min(offset+limit, total)]
	items := make([]any, 0, len(page))
	for _, u := range page {
		items = append(items, userItem(u))
	}
	writeJSON(w, r, 200, affected(items, total, &fails, "All specified users were returned", "Some users were not returned", "No user was returned"))
}

func userValue(u *APIUser, f string) string {
	switch f {
	case "id":
		return strconv.Itoa(u.ID)
	case "username":
		return u.Username
	case "allow_run_as":
		return strconv.FormatBool(u.AllowRunAs)
	case "roles":
		return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(u.Roles)), ","), "[]")
	}
	return ""
}

type userBody struct {
	Username   *string `json:"username"`
	Password   *string `json:"password"`
	AllowRunAs *bool   `json:"allow_run_as"`
}

func readUserBody(w http.ResponseWriter, r *http.Request) (*userBody, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		writeProblem(w, 400, problem{Detail: "Body type is not the one specified in the content-type header", Error: 6002})
		return nil, false
	}
	var b userBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields() // the real validator refuses additional properties in the body
	if err := dec.Decode(&b); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			badParam(w, fmt.Sprintf("Additional properties are not allowed (%s was unexpected)", strings.ReplaceAll(f, `"`, "'")))
			return nil, false
		}
		badParam(w, "Invalid JSON body")
		return nil, false
	}
	return &b, true
}

func (s *APIServer) handleCreateUser(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	b, ok := readUserBody(w, r)
	if !ok {
		return
	}
	if b.Username == nil {
		badParam(w, "'username' is a required property")
		return
	}
	if b.Password == nil {
		badParam(w, "'password' is a required property")
		return
	}
	if n := len(*b.Username); n < 4 {
		badParam(w, fmt.Sprintf("'%s' is too short", *b.Username))
		return
	} else if n > 64 {
		badParam(w, fmt.Sprintf("'%s' is too long", *b.Username))
		return
	}
	if code := passwordPolicy(*b.Password); code != 0 {
		writeWazuhError(w, 400, code, "")
		return
	}
	u, err := s.users.Create(*b.Username, *b.Password)
	writeUserResult(w, r, u, err, errUserExists, 5000, *b.Username, "created")
}

func (s *APIServer) handleUpdateUser(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	id, err := strconv.Atoi(r.PathValue("user_id"))
	if err != nil {
		badParam(w, fmt.Sprintf("'%s' is not of type 'integer'", r.PathValue("user_id")))
		return
	}
	b, ok := readUserBody(w, r)
	if !ok {
		return
	}
	if b.Password == nil && b.AllowRunAs == nil {
		writeProblem(w, 400, problem{Detail: "Invalid parameter: at least one of password or allow_run_as must be specified", Error: 4001})
		return
	}
	if b.Password != nil {
		if code := passwordPolicy(*b.Password); code != 0 {
			writeWazuhError(w, 400, code, "")
			return
		}
	}
	var u *APIUser
	if b.Password != nil {
		u, err = s.users.SetPassword("", id, *b.Password, false, s.o.Now())
	} else {
		u, err = s.users.setRunAs(id, *b.AllowRunAs)
	}
	writeUserResult(w, r, u, err, errUserMissing, 5001, id, "updated")
}

// writeUserResult answers a user's creation or update (done: "created", "updated"): the user as
// the affected item, or the expected refusal (want, as Wazuh error code for the item id) as the
// failed item; any other error is the users database's 500.
func writeUserResult(w http.ResponseWriter, r *http.Request, u *APIUser, err, want error, code int, id any, done string) {
	var fails failures
	items := []any{}
	switch {
	case errors.Is(err, want):
		fails.add(werr(code, ""), id)
	case err != nil:
		writeProblem(w, 500, problem{Detail: "Error writing the users database", Error: 2008})
		return
	default:
		items = append(items, userItem(u))
	}
	writeJSON(w, r, 200, affected(items, len(items), &fails, "User was successfully "+done, "", "User could not be "+done))
}

func (s *UserStore) setRunAs(id int, v bool) (*APIUser, error) {
	var out *APIUser
	err := s.update(func(f *usersFile) error {
		for _, u := range f.Users {
			if u.ID == id {
				u.AllowRunAs, out = v, u
				return nil
			}
		}
		return errUserMissing
	})
	return out, err
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
