// Package indexer is siemctl's client for the OpenSearch 2.x node behind the
// SIEM (the "indexer"): health, settings, flush, _cat, allocation explain,
// templates, pipelines, search, count and guarded index deletion.
//
// It is built on opensearch-go/v4 (opensearchapi) with the transport from
// internal/netclient. Every method takes a context first, returns typed
// structs, and fails with a *netclient.Error whose Kind tells the CLI what
// went wrong (unreachable, timeout, TLS, unauthorized, not ready, bad
// response). Meaningful non-2xx answers are not errors: a 408 from a
// server-side health wait, a 409 from a synced flush, a 404 for a missing
// template.
//
// Retries: opensearch-go retries 502/503/504 and network errors up to six
// times by default. This client disables them: a dead or uninitialised
// indexer costs one round trip (one timeout), and callers that want to wait
// use server-side waits (Health with WaitForStatus) or their own gate loop.
package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/siemctl/siemctl/internal/redact"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Sentinels, matchable with errors.Is. They are carried inside a
// *netclient.Error (as its Err) so the Kind stays available too.
var (
	// ErrSecurityNotInitialized: the security plugin answered 503
	// "OpenSearch Security not initialized." (run the security init tool).
	// Kind: netclient.ErrNotReady.
	ErrSecurityNotInitialized = errors.New("security plugin not initialized")
	// ErrNothingToExplain: allocation explain without a shard found no
	// unassigned shard. Kind: netclient.ErrBadResponse (HTTP 400).
	ErrNothingToExplain = errors.New("no unassigned shards to explain")
	// ErrSyncedFlushUnsupported: the node has no _flush/synced endpoint
	// (removed after the 2.x deprecation shim). Kind: netclient.ErrBadResponse.
	ErrSyncedFlushUnsupported = errors.New("synced flush not supported")
	// ErrNotAcknowledged: a settings/template/index change answered
	// acknowledged=false. Kind: netclient.ErrBadResponse.
	ErrNotAcknowledged = errors.New("change not acknowledged")
	// ErrIndexNotFound: a concrete (non-wildcard) index does not exist.
	// Kind: netclient.ErrBadResponse (HTTP 404).
	ErrIndexNotFound = errors.New("index not found")
	// ErrUnsafeIndexName: DeleteIndices refused a name (wildcard, empty,
	// leading '-' or '_', …) before any request. Kind: netclient.ErrBadResponse.
	ErrUnsafeIndexName = errors.New("unsafe index name")
)

// Options configure a Client. Password is used for basic auth only and never
// appears in logs or errors.
type Options struct {
	URL      string // e.g. https://127.0.0.1:9200
	Username string
	Password string
	CAFile   string // PEM bundle to verify the node; empty: system roots
	Insecure bool   // skip TLS verification (explicit, reported opt-out)
	// Timeout is a per-request ceiling applied on top of the caller's
	// context (0: only the context bounds a request). Health with a
	// server-side wait extends it by the wait.
	Timeout   time.Duration
	Transport http.RoundTripper // tests: replaces the netclient transport
	Logger    *slog.Logger      // nil: discard
}

// Client talks to one indexer node. It is safe for concurrent use.
type Client struct {
	api     *opensearchapi.Client
	url     string // redacted base URL, for errors
	timeout time.Duration
	log     *slog.Logger
	cancel  context.CancelFunc
	opts    Options // what New was given (At reuses it for another node)
}

// New builds a Client. It does not contact the node.
func New(opts Options) (*Client, error) {
	if opts.URL == "" {
		return nil, errors.New("indexer: empty URL")
	}
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("indexer: parse URL %q: %w", redact.URL(opts.URL), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("indexer: URL %q: scheme must be http or https", redact.URL(opts.URL))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("indexer: URL %q has no host", redact.URL(opts.URL))
	}
	// Credentials embedded in the URL are honoured but never kept in it.
	if u.User != nil {
		if opts.Username == "" {
			opts.Username = u.User.Username()
		}
		if pw, ok := u.User.Password(); ok && opts.Password == "" {
			opts.Password = pw
		}
		u.User = nil
	}
	u.RawQuery, u.Fragment = "", ""

	tr := opts.Transport
	if tr == nil {
		hc, err := netclient.NewHTTPClient(netclient.TLSOptions{CAFile: opts.CAFile, Insecure: opts.Insecure}, 0)
		if err != nil {
			return nil, fmt.Errorf("indexer: %w", err)
		}
		tr = hc.Transport
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bg, cancel := context.WithCancel(context.Background())
	api, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{
		Addresses:             []string{u.String()},
		Username:              opts.Username,
		Password:              opts.Password,
		Transport:             tr,
		DisableRetry:          true, // one request, one timeout (see package doc)
		RetryOnStatus:         []int{},
		HealthCheckMaxRetries: -1,
		DiscoverNodesOnStart:  new(false),
		Context:               bg,
	}})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("indexer: %w", err)
	}
	return &Client{api: api, url: u.String(), timeout: opts.Timeout, log: log, cancel: cancel, opts: opts}, nil
}

// Close releases background resources of the underlying transport.
func (c *Client) Close() error {
	c.cancel()
	return c.api.Close()
}

// URL returns the node's base URL (without credentials).
func (c *Client) URL() string { return c.url }

// request is an opensearch.Request built from a path (already escaped), a
// query and an optional JSON body.
type request struct {
	path  string
	query url.Values
	body  []byte
	// max bounds the answer (0: netclient.MaxAnswer); a search for many
	// hits may allow more.
	max int64
}

func (r request) GetRequest(method string) (*http.Request, error) {
	target := r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		return nil, err
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// response is one answer from the node.
type response struct {
	op     string
	status int
	header http.Header
	body   []byte
}

// call performs one request with no retry. Statuses in accept (plus any
// 2xx) are answers; any other status becomes a classified *netclient.Error.
func (c *Client) call(ctx context.Context, method string, req opensearch.Request, op string, accept ...int) (*response, error) {
	return c.callWithin(ctx, c.timeout, method, req, op, accept...)
}

func (c *Client) callWithin(ctx context.Context, ceiling time.Duration, method string, req opensearch.Request, op string, accept ...int) (*response, error) {
	if ceiling > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ceiling)
		defer cancel()
	}
	op = method + " " + op
	start := time.Now()
	httpReq, err := req.GetRequest(method)
	if err != nil {
		return nil, &netclient.Error{Service: service, Op: op, URL: c.url, Kind: netclient.ErrBadResponse, Detail: "build request", Err: err}
	}
	// Stream, not Do: opensearch-go's Do buffers every answer whole with no
	// bound; the body is read here, once, under the cap.
	resp, err := c.api.Client.Stream(httpReq.WithContext(ctx))
	var (
		status  int
		body    []byte
		header  http.Header
		bodyErr bool
	)
	if resp != nil {
		status, header = resp.StatusCode, resp.Header
		if resp.Body != nil {
			var rerr error
			limit := netclient.MaxAnswer
			if r, ok := req.(request); ok && r.max > 0 {
				limit = r.max
			}
			body, rerr = netclient.ReadBody(resp, limit, op)
			_ = resp.Body.Close()
			if err == nil && rerr != nil {
				err, bodyErr = rerr, true
			}
		}
	}
	c.log.Debug("indexer request", "op", op, "status", status, "duration", time.Since(start), "error", err)
	if err != nil {
		return nil, c.transportError(ctx, op, status, body, err, bodyErr)
	}
	r := &response{op: op, status: status, header: header, body: body}
	if status >= 200 && status < 300 {
		return r, nil
	}
	for _, a := range accept {
		if status == a {
			return r, nil
		}
	}
	return r, c.statusError(op, status, header, body)
}

func (c *Client) transportError(ctx context.Context, op string, status int, body []byte, err error, bodyErr bool) error {
	p := c.peer()
	if e := p.Stopped(ctx, op, status, err); e != nil {
		return e
	}
	if status != 0 && bodyErr {
		// The head arrived but the body broke off: a truncated answer.
		return &netclient.Error{Service: service, Op: op, URL: c.url, Status: status, Kind: netclient.ErrBadResponse,
			Detail: "truncated body: " + netclient.Snippet(body, 120), Err: err}
	}
	return p.Classify(op, err)
}

// service names the indexer in every *netclient.Error (for hints).
const service = "indexer"

// peer is the node, for errors.
func (c *Client) peer() netclient.Peer { return netclient.Peer{Service: service, URL: c.url} }

// errorBody is the shape of OpenSearch error answers (and a few others).
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Status  json.RawMessage `json:"status"`
	Message string          `json:"message"`
	Reason  string          `json:"reason"`
}

type errorDetail struct {
	Type      string `json:"type"`
	Reason    string `json:"reason"`
	RootCause []struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"root_cause"`
}

// parseError extracts (type, reason) from an error body; for non-JSON bodies
// the type is empty and the reason is a one-line snippet.
func parseError(body []byte) (typ, reason string) {
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		return "", netclient.Snippet(body, 200)
	}
	if len(eb.Error) > 0 {
		var d errorDetail
		if err := json.Unmarshal(eb.Error, &d); err == nil && (d.Type != "" || d.Reason != "") {
			if d.Reason == "" && len(d.RootCause) > 0 {
				d.Reason = d.RootCause[0].Reason
			}
			return d.Type, d.Reason
		}
		var s string
		if err := json.Unmarshal(eb.Error, &s); err == nil {
			return "", s
		}
	}
	if eb.Message != "" {
		return "", eb.Message
	}
	if eb.Reason != "" {
		return "", eb.Reason
	}
	return "", netclient.Snippet(body, 200)
}

func (c *Client) statusError(op string, status int, header http.Header, body []byte) error {
	var detail string
	typ, reason := parseError(body)
	switch {
	case netclient.IsRedirect(status):
		detail = netclient.Redirected(status, header)
	case typ == "" && reason == netclient.Snippet(body, 200):
		// Not an OpenSearch error body: a proxy's page, plain text, …
		detail = netclient.Summary(status, header.Get("Content-Type"), body, 300)
	case typ != "":
		detail = netclient.Snippet([]byte(typ+": "+reason), 300)
	default:
		detail = netclient.Snippet([]byte(reason), 300)
	}
	e := &netclient.Error{Service: service, Op: op, URL: c.url, Status: status, Kind: netclient.StatusKind(status), Detail: detail}
	switch {
	case status == http.StatusServiceUnavailable && strings.Contains(string(body), "Security not initialized"):
		e.Err = ErrSecurityNotInitialized
	case status == http.StatusNotFound && typ == "index_not_found_exception":
		e.Err = ErrIndexNotFound
	}
	return e
}

// badResponse reports an answer that arrived but cannot be used.
func (c *Client) badResponse(r *response, err error, what string) error {
	return &netclient.Error{Service: service, Op: r.op, URL: c.url, Status: r.status, Kind: netclient.ErrBadResponse,
		Detail: what + ": " + netclient.Snippet(r.body, 120), Err: err}
}

// decode unmarshals the answer's JSON into v or reports a bad response with
// a snippet of the body.
func (c *Client) decode(r *response, v any) error {
	if len(bytes.TrimSpace(r.body)) == 0 {
		return c.badResponse(r, io.ErrUnexpectedEOF, "empty body")
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		return c.badResponse(r, err, "invalid JSON ("+err.Error()+")")
	}
	return nil
}

// typedError wraps a sentinel in a *netclient.Error for r.
func (c *Client) typedError(r *response, kind, sentinel error, detail string) error {
	status := 0
	op := ""
	if r != nil {
		status, op = r.status, r.op
	}
	return &netclient.Error{Service: service, Op: op, URL: c.url, Status: status, Kind: kind, Detail: detail, Err: sentinel}
}

// marshal encodes a request body; the values are ours, so a failure is a bug
// in the caller's input (e.g. a channel in SearchAfter).
func marshal(op string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &netclient.Error{Op: op, Kind: netclient.ErrBadResponse, Detail: "encode request body", Err: err}
	}
	return b, nil
}

// escapePath escapes each comma-separated name of an index expression for
// use as one path segment.
func escapePath(expr string) string {
	parts := strings.Split(expr, ",")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, ",")
}
