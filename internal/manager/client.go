// Package manager talks to the Wazuh-4.x-like manager: its REST API (JWT
// login, token reuse, the affected-items envelope, typed per-item errors,
// rate-limit backoff, the "daemons not ready" wait) and its command-line
// tools (control, agent_control, manage_agents) run by exec with pure,
// fuzzed parsers for their output.
package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/redact"
)

// Defaults of the retry policy.
const (
	DefaultRateLimitRetries = 3
	DefaultRateLimitBackoff = 2 * time.Second  // doubled per retry
	MaxRateLimitBackoff     = 60 * time.Second // the API's window
	DefaultNotReadyWait     = 30 * time.Second // how long a starting manager may answer 'not ready'
	DefaultNotReadyPoll     = 2 * time.Second
	// DefaultTokenLifetime is the API's auth_token_exp_timeout default, used
	// when a token carries no readable exp.
	DefaultTokenLifetime = 900 * time.Second

	loginPath = "/security/user/authenticate"
	// service names the manager API in every *netclient.Error (for hints).
	service = "manager API"
)

// Options configure a Client.
type Options struct {
	URL      string // e.g. https://127.0.0.1:55000
	Username string
	Password string // never logged, never in an error
	CAFile   string
	Insecure bool
	// Timeout is a per-request ceiling on top of the context (0: none).
	Timeout time.Duration
	// HTTPClient replaces the client built from CAFile/Insecure/Timeout
	// (tests).
	HTTPClient *http.Client
	// Clock returns now (token expiry); default time.Now.
	Clock func() time.Time
	// Sleep waits d or until ctx ends (backoff, not-ready wait); default a
	// timer.
	Sleep  func(ctx context.Context, d time.Duration) error
	Logger *slog.Logger

	// RateLimitRetries bounds the retries after 429/6001 (default 3;
	// negative: none).
	RateLimitRetries int
	// RateLimitBackoff is the first backoff when no Retry-After is given
	// (default 2 s, doubled per retry, capped at 60 s).
	RateLimitBackoff time.Duration
	// NotReadyWait bounds the total wait on 1017 "daemons not ready"
	// (default 30 s; negative: do not wait).
	NotReadyWait time.Duration
	// NotReadyPoll is the pause between attempts while not ready (default 2 s).
	NotReadyPoll time.Duration
}

// Client is a manager API client. It is safe for concurrent use: concurrent
// calls share one login.
type Client struct {
	base   *url.URL
	hc     *http.Client
	user   string
	pass   string
	clock  func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	log    *slog.Logger
	policy retryPolicy

	mu      sync.Mutex
	token   string
	renewAt time.Time
	login   *loginCall
}

type retryPolicy struct {
	rateRetries  int
	rateBackoff  time.Duration
	notReadyWait time.Duration
	notReadyPoll time.Duration
}

type loginCall struct {
	done  chan struct{}
	token string
	err   error
}

// New validates opts and returns a client. It does not contact the manager.
func New(opts Options) (*Client, error) {
	if opts.URL == "" {
		return nil, errors.New("manager: no API URL")
	}
	u, err := url.Parse(strings.TrimRight(opts.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("manager: API URL %q: want http(s)://host:port", redact.URL(opts.URL))
	}
	if u.User != nil {
		return nil, errors.New("manager: API URL must not carry credentials; use username and password_file")
	}
	if opts.Username == "" {
		return nil, errors.New("manager: no API username")
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc, err = netclient.NewHTTPClient(netclient.TLSOptions{CAFile: opts.CAFile, Insecure: opts.Insecure}, opts.Timeout)
		if err != nil {
			return nil, fmt.Errorf("manager: %w", err)
		}
	}
	c := &Client{base: u, hc: hc, user: opts.Username, pass: opts.Password, clock: opts.Clock, sleep: opts.Sleep, log: opts.Logger}
	if c.clock == nil {
		c.clock = time.Now
	}
	if c.sleep == nil {
		c.sleep = netclient.Sleep
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.policy = retryPolicy{rateRetries: opts.RateLimitRetries, rateBackoff: opts.RateLimitBackoff, notReadyWait: opts.NotReadyWait, notReadyPoll: opts.NotReadyPoll}
	if c.policy.rateRetries == 0 {
		c.policy.rateRetries = DefaultRateLimitRetries
	}
	if c.policy.rateBackoff <= 0 {
		c.policy.rateBackoff = DefaultRateLimitBackoff
	}
	if c.policy.notReadyWait == 0 {
		c.policy.notReadyWait = DefaultNotReadyWait
	}
	if c.policy.notReadyPoll <= 0 {
		c.policy.notReadyPoll = DefaultNotReadyPoll
	}
	return c, nil
}

// URL is the API base URL (no credentials).
func (c *Client) URL() string { return c.base.String() }

// request is one API call.
type request struct {
	method string
	path   string
	query  url.Values
	body   any
	// max bounds the answer (0: netclient.MaxAnswer); streamed answers,
	// whose memory does not grow with their size, may allow more.
	max int64
}

func (r request) op() string { return r.method + " " + r.path }

// call is the request line shown by dry runs: method, path and query (the
// body is not shown: it may carry a password).
func (r request) call() string {
	if len(r.query) == 0 {
		return r.op()
	}
	return r.op() + "?" + r.query.Encode()
}

func (c *Client) endpoint(path string, q url.Values) string {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// errStop is returned by handlers when the consumer stopped early.
var errStop = errors.New("stopped by caller")

// do runs rq with a bearer token and hands a 2xx body to handle. It logs in
// when needed, re-logs in once when the token is rejected, backs off on rate
// limiting and waits while daemons are not ready, all bounded by ctx.
func (c *Client) do(ctx context.Context, rq request, handle func(io.Reader) error) error {
	return c.exchange(ctx, rq, false, handle)
}

func (c *Client) exchange(ctx context.Context, rq request, isLogin bool, handle func(io.Reader) error) error {
	var body []byte
	if rq.body != nil {
		b, err := json.Marshal(rq.body)
		if err != nil {
			return fmt.Errorf("%s: encode body: %w", rq.op(), err)
		}
		body = b
	}
	endpoint := c.endpoint(rq.path, rq.query)
	var (
		relogged   bool
		rateTries  int
		rateWaited time.Duration
		notReadyMs time.Duration
	)
	for {
		if err := ctx.Err(); err != nil {
			return c.classify(rq, err)
		}
		req, err := http.NewRequestWithContext(ctx, rq.method, endpoint, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%s: %w", rq.op(), err)
		}
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		var tok string
		if isLogin {
			req.SetBasicAuth(c.user, c.pass)
		} else {
			tok, err = c.bearer(ctx)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return c.classify(rq, err)
		}
		if resp.StatusCode/100 == 2 {
			limit := rq.max
			if limit <= 0 {
				limit = netclient.MaxAnswer
			}
			err := handle(netclient.CapReader(resp.Body, limit, rq.op()))
			if err == nil || errors.Is(err, errStop) {
				_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
			}
			resp.Body.Close()
			if err == nil || errors.Is(err, errStop) {
				return err
			}
			return c.bodyError(ctx, rq, resp.StatusCode, err)
		}
		raw := netclient.ReadPrefix(resp.Body, netclient.MaxErrorAnswer)
		resp.Body.Close()
		apiErr := DecodeProblem(resp.StatusCode, raw)
		switch {
		case netclient.IsRedirect(resp.StatusCode):
			apiErr.Detail = netclient.Redirected(resp.StatusCode, resp.Header)
		case apiErr.Title == "" && apiErr.Code == 0:
			// Not the API's JSON: a proxy's HTML page, plain text, …
			apiErr.Detail = netclient.Summary(resp.StatusCode, resp.Header.Get("Content-Type"), raw, 200)
		}
		c.log.Debug("manager API error", "op", rq.op(), "status", resp.StatusCode, "code", apiErr.Code, "detail", apiErr.Detail)

		switch {
		case resp.StatusCode == http.StatusUnauthorized && !isLogin && !relogged && tokenRejected(apiErr):
			c.invalidate(tok)
			relogged = true
			c.log.Debug("manager token rejected; logging in again", "op", rq.op(), "detail", apiErr.Detail)
			continue
		case resp.StatusCode == http.StatusTooManyRequests || apiErr.Code == CodeRateLimited:
			d, ok := c.rateDelay(ctx, rateTries, resp.Header)
			if !ok {
				return c.rateLimited(rq, apiErr, isLogin, rateTries, rateWaited, d, resp.Header.Get("Retry-After"))
			}
			rateTries++
			c.log.Info("manager API rate limited; backing off", "op", rq.op(), "wait", d, "attempt", rateTries)
			if err := c.sleep(ctx, d); err != nil {
				if netclient.Interrupted(ctx, err) {
					return c.classify(rq, ctx.Err())
				}
				return c.rateLimited(rq, apiErr, isLogin, rateTries, rateWaited, d, resp.Header.Get("Retry-After"))
			}
			rateWaited += d
			continue
		case apiErr.Code == CodeDaemonsNotReady:
			if down := c.daemonsDown(ctx, rq, apiErr); len(down) > 0 {
				// A failed or stopped daemon does not come back by waiting.
				c.log.Info("manager daemons down; not waiting", "op", rq.op(), "down", strings.Join(down, ", "))
				return c.apiFailure(rq, apiErr, isLogin)
			}
			d := c.policy.notReadyPoll
			if c.policy.notReadyWait < 0 || notReadyMs+d > c.policy.notReadyWait || !fits(ctx, d) {
				return c.apiFailure(rq, apiErr, isLogin)
			}
			notReadyMs += d
			c.log.Info("manager daemons not ready; waiting", "op", rq.op(), "wait", d, "detail", apiErr.Detail)
			if err := c.sleep(ctx, d); err != nil {
				return c.apiFailure(rq, apiErr, isLogin)
			}
			continue
		}
		return c.apiFailure(rq, apiErr, isLogin)
	}
}

// daemonsDown returns the basic daemons that are failed or stopped when the
// API answered 1017: from the answer's own detail ("wazuh-analysisd->failed"),
// else from /manager/status when a token is at hand (a fresh login is
// refused with 1017 too).
func (c *Client) daemonsDown(ctx context.Context, rq request, e *APIError) []string {
	if down := NotReadyDaemons(e.Detail).Down(); len(down) > 0 || rq.path == loginPath || rq.path == statusPath {
		return down
	}
	c.mu.Lock()
	haveToken := c.token != ""
	c.mu.Unlock()
	if !haveToken {
		return nil
	}
	st, err := c.ManagerStatus(ctx)
	if err != nil {
		return nil
	}
	return st.Down()
}

// tokenRejected: the token (not the user) is the problem.
func tokenRejected(e *APIError) bool {
	d := strings.ToLower(e.Detail)
	return strings.Contains(d, "invalid token") || strings.Contains(d, "token expired") ||
		strings.Contains(d, "no authorization token")
}

// fits reports whether waiting d still leaves time before ctx's deadline.
func fits(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > d
}

// rateDelay returns the wait before retry number tries+1, honouring
// Retry-After, or false when no retry is left or the wait would outlast ctx.
func (c *Client) rateDelay(ctx context.Context, tries int, h http.Header) (time.Duration, bool) {
	if c.policy.rateRetries < 0 || tries >= c.policy.rateRetries {
		return 0, false
	}
	d := c.policy.rateBackoff << tries
	if ra := strings.TrimSpace(h.Get("Retry-After")); ra != "" {
		if secs, err := strconv.Atoi(ra); err == nil && secs >= 0 {
			d = time.Duration(secs) * time.Second
		} else if t, err := http.ParseTime(ra); err == nil {
			d = t.Sub(c.clock())
		}
	}
	if d < 0 {
		d = 0
	}
	if d > MaxRateLimitBackoff {
		d = MaxRateLimitBackoff
	}
	return d, fits(ctx, d)
}

// peer is the manager API at rq's endpoint, for errors.
func (c *Client) peer(rq request) netclient.Peer {
	return netclient.Peer{Service: service, URL: c.endpoint(rq.path, nil)}
}

// classify turns a transport or context error of rq into *netclient.Error.
func (c *Client) classify(rq request, err error) error { return c.peer(rq).Classify(rq.op(), err) }

// rateLimited is the failure after the API kept answering 429/6001: it says
// how long siemctl waited, which Retry-After it honoured, and why it gave up
// (retries used up, or the next wait would outlast the deadline).
func (c *Client) rateLimited(rq request, e *APIError, isLogin bool, tries int, waited, next time.Duration, retryAfter string) error {
	err := c.apiFailure(rq, e, isLogin)
	var ne *netclient.Error
	if !errors.As(err, &ne) {
		return err
	}
	ra := "no Retry-After"
	if retryAfter != "" {
		ra = "Retry-After: " + retryAfter
	}
	var why string
	switch {
	case c.policy.rateRetries < 0 || tries >= c.policy.rateRetries:
		why = fmt.Sprintf("still rate limited after %d retries over %s (honoured %s)", tries, waited.Round(time.Millisecond), ra)
	default:
		why = fmt.Sprintf("gave up after %d retries over %s: the API asks to wait %s (%s), longer than the time left before the deadline (--timeout)",
			tries, waited.Round(time.Millisecond), next.Round(time.Millisecond), ra)
	}
	ne.Detail = strings.TrimSuffix(ne.Detail, ".") + "; " + why
	return err
}

// apiFailure wraps an API error into a classified *netclient.Error.
func (c *Client) apiFailure(rq request, e *APIError, isLogin bool) error {
	kind := e.Kind()
	detail := e.Detail
	if isLogin && e.Status == http.StatusUnauthorized {
		kind = netclient.ErrUnauthorized
		if strings.EqualFold(strings.TrimSpace(e.Detail), "Invalid credentials") || detail == "" {
			detail = fmt.Sprintf("invalid credentials for API user %q (check manager.username and the password source)", c.user)
		}
	}
	if down := NotReadyDaemons(e.Detail).Down(); len(down) > 0 {
		detail = strings.TrimSuffix(detail, ".") + " (" + strings.Join(down, ", ") + ": waiting does not help; see " + DaemonsDownFix + ")"
	} else if x := Explain(e.Code); x != "" && (e.Code == CodeIPBlocked || e.Code == CodeRateLimited || e.Code == CodeDaemonsNotReady) {
		detail = strings.TrimSuffix(detail, ".") + " (" + x + ")"
	}
	if e.Remediation != "" {
		detail = strings.TrimSuffix(detail, ".") + "; remediation: " + e.Remediation
	}
	return &netclient.Error{Service: service, Op: rq.op(), URL: c.endpoint(rq.path, nil), Status: e.Status, Kind: kind, Code: e.Code, Detail: detail, Err: e}
}

// bodyError classifies a failure while reading or decoding a 2xx body.
func (c *Client) bodyError(ctx context.Context, rq request, status int, err error) error {
	var ne *netclient.Error
	if errors.As(err, &ne) {
		return err
	}
	p := c.peer(rq)
	if e := p.Stopped(ctx, rq.op(), status, err); e != nil {
		return e
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return p.Classify(rq.op(), err)
	}
	return &netclient.Error{Service: service, Op: rq.op(), URL: p.URL, Status: status, Kind: netclient.ErrBadResponse, Detail: err.Error(), Err: err}
}

// bearer returns a valid token, logging in when there is none or it is
// about to expire. Concurrent callers share one login.
func (c *Client) bearer(ctx context.Context) (string, error) {
	for {
		c.mu.Lock()
		if c.token != "" && c.clock().Before(c.renewAt) {
			t := c.token
			c.mu.Unlock()
			return t, nil
		}
		call := c.login
		if call == nil {
			call = &loginCall{done: make(chan struct{})}
			c.login = call
			c.mu.Unlock()
			tok, renewAt, err := c.authenticate(ctx)
			c.mu.Lock()
			if err == nil {
				c.token, c.renewAt = tok, renewAt
			}
			call.token, call.err = tok, err
			c.login = nil
			c.mu.Unlock()
			close(call.done)
			return tok, err
		}
		c.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			return "", c.classify(request{method: http.MethodPost, path: loginPath}, ctx.Err())
		}
		if call.err == nil {
			return call.token, nil
		}
		// The leader's context ended; ours has not: try ourselves.
		if (errors.Is(call.err, context.Canceled) || errors.Is(call.err, context.DeadlineExceeded)) && ctx.Err() == nil {
			continue
		}
		return "", call.err
	}
}

// invalidate forgets tok if it is still the cached token.
func (c *Client) invalidate(tok string) {
	c.mu.Lock()
	if c.token == tok {
		c.token = ""
	}
	c.mu.Unlock()
}

// authenticate logs in with basic credentials (POST, never GET) and returns
// the token and when to renew it.
func (c *Client) authenticate(ctx context.Context) (string, time.Time, error) {
	rq := request{method: http.MethodPost, path: loginPath}
	var tok string
	err := c.exchange(ctx, rq, true, func(r io.Reader) error {
		res, err := DecodeResult[struct {
			Token string `json:"token"`
		}](r)
		if err != nil {
			return err
		}
		if res.Token == "" {
			return errors.New("login answered without a token")
		}
		tok = res.Token
		return nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	now := c.clock()
	lifetime := tokenLifetime(tok, now)
	margin := lifetime / 10
	if margin > time.Minute {
		margin = time.Minute
	}
	c.log.Debug("manager login", "user", c.user, "token_lifetime", lifetime)
	return tok, now.Add(lifetime - margin), nil
}

// tokenLifetime reads the JWT's exp without verifying it. It measures the
// lifetime on the server's clock (exp - nbf/iat) when it can, so a clock
// skew between hosts does not matter.
func tokenLifetime(tok string, now time.Time) time.Duration {
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(tok, claims); err != nil {
		return DefaultTokenLifetime
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return DefaultTokenLifetime
	}
	start := now
	if nbf, err := claims.GetNotBefore(); err == nil && nbf != nil {
		start = nbf.Time
	} else if iat, err := claims.GetIssuedAt(); err == nil && iat != nil {
		start = iat.Time
	}
	d := exp.Sub(start)
	if d <= 0 {
		return 0
	}
	return d
}

// getResult fetches a WazuhResult into T.
func getResult[T any](ctx context.Context, c *Client, path string, q url.Values) (T, error) {
	var out T
	err := c.do(ctx, request{method: http.MethodGet, path: path, query: q}, func(r io.Reader) error {
		v, err := DecodeResult[T](r)
		out = v
		return err
	})
	return out, err
}

// callEnvelope runs rq and decodes an affected-items envelope of T.
func callEnvelope[T any](ctx context.Context, c *Client, rq request) (*Envelope[T], error) {
	var env *Envelope[T]
	err := c.do(ctx, rq, func(r io.Reader) error {
		e, err := DecodeEnvelope[T](r)
		env = e
		return err
	})
	return env, err
}
