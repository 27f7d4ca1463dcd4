package netclient

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(p, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestClassify(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedURL := "https://" + closed.Addr().String()
	closed.Close()
	hang, _ := net.Listen("tcp", "127.0.0.1:0") // accepts (kernel backlog), never answers
	defer hang.Close()

	ca := writeCA(t, tlsSrv)
	tests := []struct {
		name string
		opts TLSOptions
		url  string
		want error
	}{
		{"verified", TLSOptions{CAFile: ca}, tlsSrv.URL, nil},
		{"unknown authority", TLSOptions{}, tlsSrv.URL, ErrTLS},
		{"insecure opt-out", TLSOptions{Insecure: true}, tlsSrv.URL, nil},
		{"https to plain http", TLSOptions{CAFile: ca}, strings.Replace(plain.URL, "http://", "https://", 1), ErrTLS},
		{"refused", TLSOptions{CAFile: ca}, closedURL, ErrUnreachable},
		{"blackhole", TLSOptions{CAFile: ca}, "https://" + hang.Addr().String(), ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewHTTPClient(tt.opts, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Only the blackhole needs a short deadline; the others must
			// not time out under -race on a loaded machine.
			timeout := 10 * time.Second
			if tt.want == ErrTimeout {
				timeout = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tt.url, nil)
			resp, err := c.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			err = Classify("GET /", tt.url, err)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want kind %v", err, tt.want)
			}
		})
	}
}

func TestClassifyRedactsAndError(t *testing.T) {
	if err := Classify("GET /", "https://admin:s3cret@127.0.0.1:9200/x", io.EOF); strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Classify kept the password: %v", err)
	}
	e := &Error{Op: "GET /_cluster/health", URL: "https://127.0.0.1:9200", Status: 429, Kind: ErrRateLimited, Code: 6001, Detail: "Maximum number of requests per minute reached"}
	want := "GET /_cluster/health https://127.0.0.1:9200: rate limited (HTTP 429, code 6001): Maximum number of requests per minute reached"
	if e.Error() != want {
		t.Fatalf("got %q\nwant %q", e.Error(), want)
	}
	if !errors.Is(e, ErrRateLimited) {
		t.Fatal("kind not matchable")
	}
	if _, err := TLSConfig(TLSOptions{CAFile: "/nonexistent"}); err == nil {
		t.Fatal("missing CA file must fail")
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not pem"), 0o600)
	if _, err := TLSConfig(TLSOptions{CAFile: bad}); err == nil || !strings.Contains(err.Error(), "no PEM") {
		t.Fatalf("bad CA file: %v", err)
	}
	_ = tls.VersionTLS12
}

// TestSleep: the pause ends when d has passed (nil) or as soon as ctx ends
// (ctx.Err()), whichever comes first.
func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("elapsed: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: got %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: got %v, want context.DeadlineExceeded", err)
	}
}

// TestPoll: f runs until it is done (nil) or fails (its error, at once);
// a context that ends during a pause ends the poll (ctx.Err()).
func TestPoll(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), time.Millisecond, func() (bool, error) { calls++; return calls == 3, nil })
	if err != nil || calls != 3 {
		t.Fatalf("done on the third call: err %v after %d calls", err, calls)
	}
	boom := errors.New("boom")
	calls = 0
	if err := Poll(context.Background(), time.Hour, func() (bool, error) { calls++; return false, boom }); err != boom || calls != 1 {
		t.Fatalf("failing f: got %v after %d calls, want boom after 1", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := Poll(ctx, time.Millisecond, func() (bool, error) { return false, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("never done: got %v, want context.DeadlineExceeded", err)
	}
}

// TestSnippet: one line, at most n bytes, invalid UTF-8 shown as '?', and a
// cut never leaves half a character.
func TestSnippet(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"one line", "  a\n\tb  c \n", 10, "a b c"},
		{"cut", "abcdef", 3, "abc…"},
		{"cut before a split character", "ab\u00e9cd", 3, "ab…"},
		{"invalid bytes", "a\xffb", 10, "a?b"},
	}
	for _, tt := range tests {
		if got := Snippet([]byte(tt.in), tt.n); got != tt.want {
			t.Errorf("%s: Snippet(%q, %d) = %q, want %q", tt.name, tt.in, tt.n, got, tt.want)
		}
	}
}

// TestPeerStopped: an answer over its cap names the cap and the service; an
// ended context is the cause whatever the transport said; anything else is
// left to the caller (nil).
func TestPeerStopped(t *testing.T) {
	p := Peer{Service: "manager API", URL: "https://127.0.0.1:55000/agents"}
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel2()
	tooLarge := &TooLargeError{What: "GET /agents", Limit: 4 << 20}
	tests := []struct {
		name   string
		ctx    context.Context
		err    error
		kind   error
		detail string
	}{
		{"too large", live, fmt.Errorf("decode: %w", tooLarge), ErrTooLarge, "larger than the 4 MiB siemctl reads of one manager API answer; stopped reading"},
		{"cancelled", cancelled, io.ErrUnexpectedEOF, ErrInterrupted, ""},
		{"deadline", expired, io.ErrUnexpectedEOF, ErrTimeout, ""},
		{"other", live, io.ErrUnexpectedEOF, nil, ""},
	}
	for _, tt := range tests {
		err := p.Stopped(tt.ctx, "GET /agents", 200, tt.err)
		if tt.kind == nil {
			if err != nil {
				t.Errorf("%s: got %v, want nil", tt.name, err)
			}
			continue
		}
		var ne *Error
		if !errors.As(err, &ne) || !errors.Is(err, tt.kind) || ne.Service != p.Service || ne.URL != p.URL || ne.Status != 200 || ne.Detail != tt.detail {
			t.Errorf("%s: got %#v, want kind %v detail %q", tt.name, err, tt.kind, tt.detail)
		}
	}
	if err := p.Classify("GET /agents", io.EOF); !errors.Is(err, ErrUnreachable) || err.(*Error).Service != "manager API" {
		t.Errorf("Classify = %#v, want ErrUnreachable from the manager API", err)
	}
}
