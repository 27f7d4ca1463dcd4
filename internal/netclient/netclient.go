// Package netclient builds the HTTP clients siemctl uses to talk to the stack
// and classifies their failures into a small taxonomy that the CLI maps to exit
// codes and fixes: unreachable, timed out, TLS, unauthorized, forbidden, rate
// limited, not ready, bad response.
//
// Every client (indexer, manager API, dashboard) wraps its errors in *Error so
// callers can use errors.Is(err, netclient.ErrUnreachable) and friends without
// knowing which component produced them. It is the HTTP layer the clients
// share: the transport (NewHTTPClient), the classification of a failed
// request to a service (Peer: transport errors, answers over their cap, the
// caller's context ending), the read caps (bounded.go) and the details of
// error answers (Snippet, Summary, Redirected).
package netclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/siemctl/siemctl/internal/redact"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// Error kinds. Match them with errors.Is.
var (
	ErrUnreachable  = errors.New("unreachable")
	ErrTimeout      = errors.New("timed out")
	ErrTLS          = errors.New("TLS verification failed")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrRateLimited  = errors.New("rate limited")
	ErrNotReady     = errors.New("not ready")
	ErrBadResponse  = errors.New("unexpected response")
	// ErrInterrupted: the caller's context was cancelled (Ctrl-C, SIGTERM),
	// nothing is known about the server.
	ErrInterrupted = errors.New("interrupted")
)

// Error is a classified failure of one request.
type Error struct {
	// Service names the component that answered ("indexer", "manager API",
	// "dashboard") so hints can be specific; it is not printed.
	Service string
	Op      string // what was attempted, e.g. "GET /_cluster/health"
	URL     string // the endpoint, never with credentials
	Status  int    // HTTP status when a response arrived, else 0
	Kind    error  // one of the Err* kinds above
	Code    int    // the service's own error code when it gave one (e.g. manager 6001, 1017)
	Detail  string // the service's message, trimmed
	Err     error  // the underlying error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.URL != "" {
		b.WriteString(" ")
		b.WriteString(e.URL)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.Status)
		if e.Code != 0 {
			fmt.Fprintf(&b, ", code %d", e.Code)
		}
		b.WriteString(")")
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes both the kind and the underlying error to errors.Is/As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// TLSOptions says how to verify a server.
type TLSOptions struct {
	CAFile     string // PEM bundle to trust in addition to nothing else; empty: system roots
	Insecure   bool   // skip verification (explicit opt-out, reported by health)
	ServerName string // override SNI / verification name
}

// TLSConfig builds a *tls.Config from opts.
func TLSConfig(opts TLSOptions) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: opts.ServerName}
	if opts.Insecure {
		cfg.InsecureSkipVerify = true //nolint:gosec // explicit, reported opt-out
		return cfg, nil
	}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", opts.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// NewHTTPClient returns a client with sane dial/TLS/header timeouts. The
// overall deadline of a request comes from its context; timeout (if > 0) is a
// per-request ceiling on top of it.
func NewHTTPClient(opts TLSOptions, timeout time.Duration) (*http.Client, error) {
	tcfg, err := TLSConfig(opts)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		Proxy:                 nil, // the stack is local; never route through a proxy
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tcfg,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 0, // bounded by the request context
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // redirects are answers (dashboard 302), not something to follow
	}}, nil
}

// Classify turns a transport-level error into *Error. It returns nil for nil.
func Classify(op, endpoint string, err error) error {
	if err == nil {
		return nil
	}
	var ne *Error
	if errors.As(err, &ne) {
		return err
	}
	return &Error{Op: op, URL: redact.URL(endpoint), Kind: kindOf(err), Err: stripURL(err)}
}

func kindOf(err error) error {
	var (
		unknownAuth x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalid     x509.CertificateInvalidError
		certVerify  *tls.CertificateVerificationError
		recordErr   tls.RecordHeaderError
		netErr      net.Error
	)
	switch {
	case errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalid),
		errors.As(err, &certVerify), errors.As(err, &recordErr),
		strings.Contains(err.Error(), "HTTP response to HTTPS client"):
		return ErrTLS
	case errors.Is(err, ErrTooLarge):
		return ErrTooLarge
	case errors.Is(err, context.DeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, context.Canceled):
		return ErrInterrupted
	case errors.As(err, &netErr) && netErr.Timeout():
		return ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrUnreachable
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || errors.As(err, &opErr) {
		return ErrUnreachable
	}
	if msg := err.Error(); strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:") ||
		strings.Contains(msg, "HTTP response to HTTPS client") {
		return ErrTLS
	}
	return ErrUnreachable
}

// stripURL removes the *url.Error wrapper (whose message repeats the URL) but
// keeps the cause.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// StatusKind maps an HTTP status to a kind for responses that are failures.
func StatusKind(status int) error {
	switch {
	case status == http.StatusUnauthorized:
		return ErrUnauthorized
	case status == http.StatusForbidden:
		return ErrForbidden
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status == http.StatusServiceUnavailable:
		return ErrNotReady
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return ErrTimeout
	default:
		return ErrBadResponse
	}
}

// Snippet returns at most n bytes of body as a single trimmed line, for error
// details: invalid UTF-8 becomes '?', and a cut never splits a character.
func Snippet(body []byte, n int) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "?")), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// Peer is the service a client talks to, for its errors: Service names it
// ("indexer", "manager API") so hints can be specific, URL is where it
// answers (never with credentials).
type Peer struct {
	Service string
	URL     string
}

// Classify is the package's Classify for a request to p, with p's Service.
func (p Peer) Classify(op string, err error) error {
	e := Classify(op, p.URL, err)
	var ne *Error
	if errors.As(e, &ne) && ne.Service == "" {
		ne.Service = p.Service
	}
	return e
}

// Stopped classifies a read that siemctl itself stopped: an answer over its
// cap (ErrTooLarge, naming the cap) or the caller's context ending, whatever
// the transport said (ErrInterrupted on cancellation, else ErrTimeout). It
// returns nil for any other err. status is the HTTP status when a head
// arrived, else 0.
func (p Peer) Stopped(ctx context.Context, op string, status int, err error) error {
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		return &Error{Service: p.Service, Op: op, URL: p.URL, Status: status, Kind: ErrTooLarge,
			Detail: "larger than the " + FormatBytes(tooLarge.Limit) + " siemctl reads of one " + p.Service + " answer; stopped reading", Err: tooLarge}
	}
	ctxErr := ctx.Err()
	if ctxErr == nil {
		return nil
	}
	kind := ErrTimeout
	if Interrupted(ctx, err) {
		kind = ErrInterrupted
	}
	return &Error{Service: p.Service, Op: op, URL: p.URL, Status: status, Kind: kind, Err: ctxErr}
}

// Sleep waits d or until ctx ends, whichever comes first; it returns
// ctx.Err() when ctx ended first. It is the pause between polls and retries
// of every client and operation.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Poll calls f, then again after each pause of interval (Sleep), until f
// says done (nil), f fails (its error) or ctx ends during a pause
// (ctx.Err()).
func Poll(ctx context.Context, interval time.Duration, f func() (bool, error)) error {
	for {
		if done, err := f(); err != nil || done {
			return err
		}
		if err := Sleep(ctx, interval); err != nil {
			return err
		}
	}
}
