package netclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/siemctl/siemctl/internal/redact"
)

// Caps on what siemctl reads of one answer. An answer over its cap is an
// error naming the answer and the cap (*TooLargeError), never a silent
// truncation and never an unbounded buffer: `snapshot capture` runs hourly
// from a timer and must not be blown up by one runaway endpoint.
const (
	// MaxAnswer bounds one JSON answer of the indexer, the manager API or
	// the dashboard (a page of 2,000 agents is about 2 MiB; _cat/indices of
	// 10,000 indices about 3 MiB).
	MaxAnswer int64 = 4 << 20
	// MaxErrorAnswer bounds an error answer (only a summary is shown).
	MaxErrorAnswer int64 = 64 << 10
	// MaxToolOutput bounds one output stream of a child tool.
	MaxToolOutput int64 = 1 << 20
)

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("answer too large")

// TooLargeError is an answer that exceeded its cap.
type TooLargeError struct {
	What  string // which answer, e.g. "GET /_cat/indices" or "agent_control -l stdout"
	Limit int64  // the cap in bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: answer larger than the %s cap; stopped reading", e.What, FormatBytes(e.Limit))
}

// Is matches ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// FormatBytes renders a cap: 16 MiB, 64 KiB, 100 B.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d B", n)
	}
}

// CapReader returns a reader that yields at most limit bytes of r and then
// fails with *TooLargeError naming what (instead of io.EOF) if r has more.
func CapReader(r io.Reader, limit int64, what string) io.Reader {
	return &capReader{r: r, left: limit, limit: limit, what: what}
}

type capReader struct {
	r     io.Reader
	left  int64
	limit int64
	what  string
	err   error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.err = &TooLargeError{What: c.what, Limit: c.limit}
			return 0, c.err
		}
		if err != nil {
			c.err = err
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}

// ReadAll reads r to the end, failing with *TooLargeError naming what when
// it holds more than limit bytes. It reads into fixed blocks and copies them
// once into a slice of the exact size, so an answer of n bytes costs about
// 2n of allocation, not the 4-5n of a slice grown by appending.
func ReadAll(r io.Reader, limit int64, what string) ([]byte, error) {
	const block = 64 << 10
	cr := CapReader(r, limit, what)
	var (
		blocks [][]byte
		total  int
		err    error
	)
	for err == nil {
		b := make([]byte, block)
		n := 0
		for n < block && err == nil {
			var m int
			m, err = cr.Read(b[n:])
			n += m
		}
		if n > 0 {
			blocks = append(blocks, b[:n])
			total += n
		}
	}
	if err == io.EOF {
		err = nil
	}
	if len(blocks) == 1 {
		return blocks[0], err
	}
	out := make([]byte, 0, total)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out, err
}

// ReadPrefix reads at most limit bytes of r for an error summary; the rest
// is ignored (an error answer is summarised, never parsed whole).
func ReadPrefix(r io.Reader, limit int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, limit))
	return b
}

// ReadBody reads resp's body whole, failing with *TooLargeError naming
// what past limit bytes. A Content-Length within the cap sizes the buffer
// once (no growth by doubling: a 8 MiB answer costs 8 MiB, not 16).
func ReadBody(resp *http.Response, limit int64, what string) ([]byte, error) {
	if resp.ContentLength > 0 && resp.ContentLength <= limit {
		buf := bytes.NewBuffer(make([]byte, 0, resp.ContentLength+1))
		_, err := buf.ReadFrom(CapReader(resp.Body, limit, what))
		return buf.Bytes(), err
	}
	return ReadAll(resp.Body, limit, what)
}

// Summary renders an error answer for a message: an HTML page (a proxy's
// or a web server's 5xx) is reduced to its <title> (else its status line),
// anything else to one trimmed line of at most n bytes.
func Summary(status int, contentType string, body []byte, n int) string {
	if isHTML(contentType, body) {
		if m := titleRE.FindSubmatch(body); m != nil {
			if t := strings.Join(strings.Fields(html.UnescapeString(string(m[1]))), " "); t != "" {
				return "HTML page " + strconvQuote(Snippet([]byte(t), 120))
			}
		}
		if t := http.StatusText(status); t != "" {
			return fmt.Sprintf("HTML page (%d %s)", status, t)
		}
		return "HTML page"
	}
	return Snippet(body, n)
}

var titleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

func isHTML(contentType string, body []byte) bool {
	if strings.Contains(strings.ToLower(contentType), "html") {
		return true
	}
	b := bytes.ToLower(bytes.TrimSpace(body))
	return bytes.HasPrefix(b, []byte("<!doctype html")) || bytes.HasPrefix(b, []byte("<html")) || bytes.Contains(b, []byte("<body"))
}

func strconvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `'`) + `"` }

// Redirected describes a 3xx answer: siemctl never follows redirects (a
// redirect would carry credentials elsewhere), so the message names where
// the server points, to put in the config.
func Redirected(status int, h http.Header) string {
	loc := h.Get("Location")
	if loc == "" {
		return fmt.Sprintf("redirect (HTTP %d) without a Location", status)
	}
	if u, err := url.Parse(loc); err == nil {
		u.User = nil // never repeat credentials a server put in its Location
		loc = u.String()
	} else {
		loc = redact.URL(loc)
	}
	return fmt.Sprintf("redirected to %s; siemctl does not follow redirects: set the URL in the config to where the service really answers", loc)
}

// IsRedirect reports a 3xx status that points elsewhere (not 304).
func IsRedirect(status int) bool {
	return status >= 300 && status < 400 && status != http.StatusNotModified
}

// Interrupted reports whether err is the end of ctx by cancellation (Ctrl-C
// or SIGTERM through the signal context), not by a deadline.
func Interrupted(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) && !errors.Is(ctx.Err(), context.DeadlineExceeded) &&
		!errors.Is(err, context.DeadlineExceeded)
}

// CapWriter keeps the first limit bytes written to it and counts the rest:
// a child tool's output is read in full (the child never blocks on a full
// pipe) but never held beyond the cap. Err says whether the cap was hit.
type CapWriter struct {
	What  string // which output, e.g. "agent_control -l stdout"
	Limit int64
	buf   bytes.Buffer
	over  bool
}

// Write implements io.Writer; it never fails.
func (w *CapWriter) Write(p []byte) (int, error) {
	if room := w.Limit - int64(w.buf.Len()); room > 0 {
		if int64(len(p)) > room {
			w.buf.Write(p[:room])
			w.over = true
		} else {
			w.buf.Write(p)
		}
	} else if len(p) > 0 {
		w.over = true
	}
	return len(p), nil
}

// Bytes is what was kept (at most Limit bytes).
func (w *CapWriter) Bytes() []byte { return w.buf.Bytes() }

// Err is a *TooLargeError when more than Limit bytes were written.
func (w *CapWriter) Err() error {
	if w.over {
		return &TooLargeError{What: w.What, Limit: w.Limit}
	}
	return nil
}
