package manager

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
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
