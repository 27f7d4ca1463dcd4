// Package dashboard emulates an OpenSearch-Dashboards-like web UI: login redirect, login page,
// /auth/login against the indexer's security plugin, and /api/status with the package version.
//
// Like the real server it needs the indexer: it connects to opensearch.hosts with its own
// credentials (opensearch.username, and opensearch.password from the file or the keystore) and,
// until that works, answers every route 503 "OpenSearch Dashboards server is not ready yet" with
// Retry-After: 30 (the real NotReady server of src/core/server/http/http_service.ts). Once started,
// a lost indexer turns /api/status red (core:opensearch "Unable to retrieve version information
// from OpenSearch nodes.") and logins fail with 500, as the real one does.
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the subset of dashboard.yml (opensearch_dashboards.yml keys) the emulator uses.
type Config struct {
	Host         string
	Port         int
	SSL          bool
	Cert, Key    string
	IndexerHosts []string
	IndexerCAs   []string
	VerifyMode   string
	DefaultRoute string
	// The dashboard's own indexer credentials (opensearch.username / opensearch.password; the
	// keystore next to the config file overrides the file's password, as in the real server).
	Username, Password string
}

// flatten puts m's leaves into out under dotted keys, as the dashboard reads its settings
// ("server.ssl.enabled" and "server: {ssl: {enabled: …}}" are one setting). The emulator reads
// its file itself, not with siemctl's reader, so that a bug in one does not hide in the other.
func flatten(out map[string]any, prefix string, m map[string]any) {
	for k, v := range m {
		if prefix != "" {
			k = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(out, k, sub)
			continue
		}
		out[k] = v
	}
}

// LoadConfig reads dashboard.yml (flat dotted keys or nested maps).
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, newYAMLError(path, b, err)
	}
	flat := map[string]any{}
	flatten(flat, "", raw)
	str := func(k, def string) string {
		if v, ok := flat[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return def
	}
	list := func(k string) []string {
		switch v := flat[k].(type) {
		case []any:
			out := make([]string, 0, len(v))
			for _, x := range v {
				out = append(out, fmt.Sprint(x))
			}
			return out
		case string:
			return []string{v}
		}
		return nil
	}
	c := &Config{Host: str("server.host", "localhost"), SSL: str("server.ssl.enabled", "false") == "true",
		Cert: str("server.ssl.certificate", ""), Key: str("server.ssl.key", ""),
		IndexerHosts: list("opensearch.hosts"), IndexerCAs: list("opensearch.ssl.certificateAuthorities"),
		VerifyMode: str("opensearch.ssl.verificationMode", "full"), DefaultRoute: str("uiSettings.overrides.defaultRoute", "/app/wz-home")}
	c.Port, err = strconv.Atoi(str("server.port", "5601"))
	if err != nil {
		return nil, fmt.Errorf("server.port: %w", err)
	}
	c.Username, c.Password = str("opensearch.username", ""), str("opensearch.password", "")
	ks, err := ReadKeystore(filepath.Join(filepath.Dir(path), KeystoreName))
	switch {
	case err == nil:
		if u, ok := ks["opensearch.username"]; ok {
			c.Username = u
		}
		if p, ok := ks["opensearch.password"]; ok {
			c.Password = p
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	return c, nil
}

// Server is the dashboard HTTP handler.
type Server struct {
	conf     *Config
	version  string
	hostname string
	uuid     string
	started  time.Time
	now      func() time.Time
	log      *slog.Logger
	client   *http.Client

	mu       sync.Mutex
	sessions map[string]string

	ready   atomic.Bool // the indexer answered once (the real server's start completed)
	osMu    sync.Mutex
	osErr   string // the last failed indexer check ("" when it answered)
	osSince time.Time
}

// notReady is the real NotReady server's body (hapi: text/html).
const notReady = "OpenSearch Dashboards server is not ready yet"

// healthCheckDelay is the real opensearch.healthCheck.delay default.
const healthCheckDelay = 2500 * time.Millisecond

// CheckIndexer asks opensearch.hosts for GET / with the dashboard's own credentials, as the real
// server's version check does, and records the outcome: the first success makes the server ready.
func (s *Server) CheckIndexer(ctx context.Context) error {
	err := s.pingIndexer(ctx)
	s.osMu.Lock()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != s.osErr || s.osSince.IsZero() {
		s.osSince = s.now()
	}
	s.osErr = msg
	s.osMu.Unlock()
	if err == nil {
		s.ready.Store(true)
	}
	return err
}

func (s *Server) pingIndexer(ctx context.Context) error {
	if len(s.conf.IndexerHosts) == 0 {
		return errors.New("[ConnectionError]: opensearch.hosts is not set")
	}
	var last error
	for _, h := range s.conf.IndexerHosts {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(h, "/")+"/", nil)
		if err != nil {
			cancel()
			last = fmt.Errorf("[ConnectionError]: %s: %v", h, err)
			continue
		}
		if s.conf.Username != "" {
			req.SetBasicAuth(s.conf.Username, s.conf.Password)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			cancel()
			last = fmt.Errorf("[ConnectionError]: %s: %v", h, unwrapURL(err))
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		cancel()
		switch {
		case resp.StatusCode == http.StatusOK:
			return nil
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			last = fmt.Errorf("[security_exception]: %s answered %d for user %q: Unauthorized", h, resp.StatusCode, s.conf.Username)
		default:
			last = fmt.Errorf("[ResponseError]: %s answered %d", h, resp.StatusCode)
		}
	}
	return last
}

func unwrapURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// Watch checks the indexer every healthCheckDelay until ctx ends, logging each failure as the
// real server does (tags error, opensearch, data).
func (s *Server) Watch(ctx context.Context) {
	for {
		if err := s.CheckIndexer(ctx); err != nil && ctx.Err() == nil {
			s.log.Error(err.Error(), "tags", []string{"error", "opensearch", "data"})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(healthCheckDelay):
		}
	}
}

// NewServer builds the handler; version is the package version ("4.9.0").
func NewServer(conf *Config, version string, log *slog.Logger, now func() time.Time) (*Server, error) {
	if now == nil {
		now = time.Now
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(conf.IndexerCAs) > 0 {
		pool := x509.NewCertPool()
		for _, ca := range conf.IndexerCAs {
			b, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("opensearch.ssl.certificateAuthorities: %w", err)
			}
			pool.AppendCertsFromPEM(b)
		}
		tc.RootCAs = pool
	}
	if conf.VerifyMode == "none" {
		tc.InsecureSkipVerify = true
	}
	host, _ := os.Hostname()
	u := make([]byte, 16)
	_, _ = rand.Read(u)
	h := hex.EncodeToString(u)
	return &Server{conf: conf, version: version, hostname: host, uuid: h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:],
		started: now(), now: now, log: log, sessions: map[string]string{},
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, Proxy: nil}}}, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func boomErr(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		StatusCode int    `json:"statusCode"`
		Error      string `json:"error"`
		Message    string `json:"message"`
	}{code, http.StatusText(code), msg})
}

const loginPage = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>SIEM dashboard</title></head>
<body><div id="osd-body"><form class="login-wrapper" method="post" action="/auth/login">
<label>Username<input name="username" autocomplete="username"></label>
<label>Password<input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Log in</button></form></div></body></html>
`

func (s *Server) session(r *http.Request) string {
	c, err := r.Cookie("security_authentication")
	if err != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[c.Value]
}

// ServeHTTP routes the dashboard endpoints; before the indexer answered once, every route is the
// real NotReady server's 503.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, notReady)
		return
	}
	switch {
	case r.URL.Path == "/" && r.Method == http.MethodGet:
		if s.session(r) != "" {
			http.Redirect(w, r, s.conf.DefaultRoute, http.StatusFound)
			return
		}
		w.Header().Set("Location", "/app/login?nextUrl=%2F")
		w.WriteHeader(http.StatusFound)
	case r.URL.Path == "/app/login" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("osd-name", s.hostname)
		_, _ = io.WriteString(w, loginPage)
	case r.URL.Path == "/auth/login" && r.Method == http.MethodPost:
		s.login(w, r)
	case r.URL.Path == "/auth/logout" && r.Method == http.MethodPost:
		if c, err := r.Cookie("security_authentication"); err == nil {
			s.mu.Lock()
			delete(s.sessions, c.Value)
			s.mu.Unlock()
		}
		writeJSON(w, 200, map[string]any{})
	case r.URL.Path == "/api/status" && r.Method == http.MethodGet:
		s.status(w)
	case strings.HasPrefix(r.URL.Path, "/app/"):
		if s.session(r) == "" {
			w.Header().Set("Location", "/app/login?nextUrl="+strings.ReplaceAll(r.URL.Path, "/", "%2F"))
			w.WriteHeader(http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><body><div id=\"osd-body\">SIEM</div></body></html>\n")
	default:
		boomErr(w, 404, "Not Found")
	}
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("osd-xsrf") == "" && r.Header.Get("kbn-xsrf") == "" {
		boomErr(w, 400, "Request must contain a osd-xsrf header.")
		return
	}
	var body struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil || body.Username == "" {
		boomErr(w, 400, "[request body.username]: expected value of type [string] but got [undefined]")
		return
	}
	info, code, err := s.authinfo(r.Context(), body.Username, body.Password)
	switch {
	case err != nil:
		s.log.Error("authentication backend", "err", err)
		boomErr(w, 500, "An internal server error occurred.")
		return
	case code == 401 || code == 403:
		boomErr(w, 401, "Invalid username or password")
		return
	case code != 200:
		boomErr(w, 500, "An internal server error occurred.")
		return
	}
	tok := make([]byte, 24)
	_, _ = rand.Read(tok)
	sid := hex.EncodeToString(tok)
	s.mu.Lock()
	s.sessions[sid] = body.Username
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "security_authentication", Value: sid, Path: "/", HttpOnly: true, Secure: s.conf.SSL, SameSite: http.SameSiteLaxMode})
	writeJSON(w, 200, map[string]any{"username": body.Username, "tenants": map[string]bool{"global_tenant": true},
		"roles": info.Roles, "backendroles": info.BackendRoles, "selectedTenant": ""})
}

type authInfo struct {
	Roles        []string `json:"roles"`
	BackendRoles []string `json:"backend_roles"`
}

// authinfo asks the indexer's security plugin who the credentials belong to.
func (s *Server) authinfo(ctx context.Context, user, pw string) (*authInfo, int, error) {
	if len(s.conf.IndexerHosts) == 0 {
		return nil, 0, errors.New("opensearch.hosts is not set")
	}
	var lastErr error
	for _, h := range s.conf.IndexerHosts {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(h, "/")+"/_plugins/_security/authinfo", nil)
		if err != nil {
			lastErr = err
			continue
		}
		req.SetBasicAuth(user, pw)
		resp, err := s.client.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		var info authInfo
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info)
		_ = resp.Body.Close()
		return &info, resp.StatusCode, nil
	}
	return nil, 0, lastErr
}

func (s *Server) status(w http.ResponseWriter) {
	now := s.now().UTC().Format(time.RFC3339Nano)
	s.osMu.Lock()
	osErr := s.osErr
	s.osMu.Unlock()
	// The legacy status format of src/core/server/status/legacy_status.ts: green "Looking good",
	// red (critical/unavailable) "Danger Will Robinson! Danger!"; the route answers 200 either way.
	overall := map[string]any{"since": now, "state": "green", "title": "Green", "nickname": "Looking good", "icon": "success", "uiColor": "secondary"}
	osStatus := map[string]any{"id": "core:opensearch@" + s.version, "message": "OpenSearch is available", "since": now, "state": "green", "icon": "success", "uiColor": "secondary"}
	if osErr != "" {
		overall = map[string]any{"since": now, "state": "red", "title": "Red", "nickname": "Danger Will Robinson! Danger!", "icon": "danger", "uiColor": "danger"}
		osStatus = map[string]any{"id": "core:opensearch@" + s.version, "message": "Unable to retrieve version information from OpenSearch nodes.", "since": now, "state": "red", "icon": "danger", "uiColor": "danger"}
	}
	writeJSON(w, 200, map[string]any{
		"name": s.hostname, "uuid": s.uuid,
		"version": map[string]any{"number": s.version, "build_hash": "8f2b4c1e9d7a", "build_number": 1, "build_snapshot": false},
		"status": map[string]any{
			"overall": overall,
			"statuses": []any{
				osStatus,
				map[string]any{"id": "core:savedObjects@" + s.version, "message": "SavedObjects service has completed migrations and is available", "since": now, "state": "green", "icon": "success", "uiColor": "secondary"},
			},
		},
		"metrics": map[string]any{"last_updated": now, "collection_interval_in_millis": 5000,
			"process": map[string]any{"uptime_in_millis": s.now().Sub(s.started).Milliseconds()}},
	})
}

// ReadVersion reads the package's VERSION.json ({"version":"4.9.0","revision":"01"}).
func ReadVersion(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read version: %w", err)
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Version == "" {
		return "", fmt.Errorf("read version %s: malformed", path)
	}
	return v.Version, nil
}

// Main runs `siem-dashboard --config FILE`; exe locates VERSION.json (INSTALL/bin/siem-dashboard →
// INSTALL/VERSION.json).
func Main(ctx context.Context, args []string, exe string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("siem-dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "dashboard.yml")
	fs.StringVar(cfgPath, "c", "", "dashboard.yml (short)")
	versionFile := fs.String("version-file", filepath.Join(filepath.Dir(filepath.Dir(exe)), "VERSION.json"), "package VERSION.json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	if *cfgPath == "" {
		fmt.Fprintln(stderr, "siem-dashboard: --config is required")
		return 2
	}
	conf, err := LoadConfig(*cfgPath)
	var ye *YAMLError
	if errors.As(err, &ye) {
		// the real server's js-yaml throws before any logging: Node's uncaught exception
		ye.Print(stderr, filepath.Dir(filepath.Dir(exe)))
		return 1
	}
	if err != nil {
		log.Error("FATAL", "err", err)
		return 1
	}
	ver, err := ReadVersion(*versionFile)
	if err != nil {
		log.Error("FATAL", "err", err)
		return 1
	}
	// the real server reads server.ssl.key, then server.ssl.certificate, as its HTTP service
	// sets up (SslConfig), before its indexer client reads its CAs and before it binds its port
	var cert tls.Certificate
	if conf.SSL {
		cert, err = loadKeyPair(conf.Key, conf.Cert)
		if err != nil {
			fatal(stdout, stderr, nodeError(err))
			return 1
		}
	}
	srv, err := NewServer(conf, ver, log, nil)
	if err != nil {
		fatal(stdout, stderr, nodeError(err))
		return 1
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(conf.Host, strconv.Itoa(conf.Port)))
	if err != nil {
		log.Error("FATAL", "err", fmt.Errorf("Port %d is already in use. Another instance of OpenSearch Dashboards may be running: %w", conf.Port, err))
		fatal(stdout, stderr, fmt.Sprintf("Error: Port %d is already in use. Another instance of OpenSearch Dashboards may be running!", conf.Port))
		return 1
	}
	if conf.SSL {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	// The watcher logs into stdout as the server does: it ends before Main returns, as a process's
	// threads end with it (a caller reads stdout once Main returned).
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); srv.Watch(wctx) }()
	defer func() { stopWatch(); <-watched }()
	scheme := "http"
	if conf.SSL {
		scheme = "https"
	}
	log.Info(fmt.Sprintf("http server running at %s://%s", scheme, ln.Addr()), "tags", []string{"listening", "info"})
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return 0
	case err := <-errc:
		log.Error("FATAL", "err", err)
		return 1
	}
}

// DefaultConfig is the packaged dashboard.yml (siem layout); certs is the directory of root-ca.pem,
// dashboard.pem and dashboard-key.pem.
func DefaultConfig(certs string, port, indexerPort int) []byte {
	return fmt.Appendf(nil, `server.host: 127.0.0.1
server.port: %d
opensearch.hosts: https://127.0.0.1:%d
opensearch.ssl.verificationMode: certificate
opensearch.ssl.certificateAuthorities: ["%s"]
opensearch.username: kibanaserver
opensearch.requestHeadersAllowlist: ["securitytenant","Authorization"]
opensearch_security.multitenancy.enabled: false
opensearch_security.readonly_mode.roles: ["kibana_read_only"]
server.ssl.enabled: true
server.ssl.key: "%s"
server.ssl.certificate: "%s"
uiSettings.overrides.defaultRoute: /app/wz-home
`, port, indexerPort, filepath.Join(certs, "root-ca.pem"), filepath.Join(certs, "dashboard-key.pem"), filepath.Join(certs, "dashboard.pem"))
}

// StockConfig is opensearch_dashboards.yml as the wazuh-dashboard 4.x package installs it: every
// address, the indexer at https://localhost, the dashboard's own certificates under certs.
func StockConfig(certs string, port, indexerPort int) []byte {
	return fmt.Appendf(nil, `server.host: 0.0.0.0
opensearch.hosts: https://localhost:%[2]d
server.port: %[1]d
opensearch.ssl.verificationMode: certificate
# opensearch.username: kibanaserver
# opensearch.password: kibanaserver
opensearch.requestHeadersAllowlist: ["securitytenant","Authorization"]
opensearch_security.multitenancy.enabled: false
opensearch_security.readonly_mode.roles: ["kibana_read_only"]
server.ssl.enabled: true
server.ssl.key: "%[3]s/dashboard-key.pem"
server.ssl.certificate: "%[3]s/dashboard.pem"
opensearch.ssl.certificateAuthorities: ["%[3]s/root-ca.pem"]
uiSettings.overrides.defaultRoute: /app/wz-home
`, port, indexerPort, certs)
}
