package netclient

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadAllCap(t *testing.T) {
	for _, tc := range []struct {
		size, limit int
		tooLarge    bool
	}{{0, 10, false}, {10, 10, false}, {11, 10, true}, {200 << 10, 200 << 10, false}, {200<<10 + 1, 200 << 10, true}} {
		in := bytes.Repeat([]byte("x"), tc.size)
		for name, r := range map[string]func() any{"plain": func() any { return bytes.NewReader(in) }, "one byte": func() any { return iotest.OneByteReader(bytes.NewReader(in)) }} {
			got, err := ReadAll(r().(interface{ Read([]byte) (int, error) }), int64(tc.limit), "GET /x")
			if tc.tooLarge {
				var tl *TooLargeError
				if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.What != "GET /x" || len(got) > tc.limit {
					t.Errorf("%s %d/%d: %d bytes, err %v", name, tc.size, tc.limit, len(got), err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, in) {
				t.Errorf("%s %d/%d: %d bytes, err %v", name, tc.size, tc.limit, len(got), err)
			}
		}
	}
	// a broken body is its own error, not "too large"
	_, err := ReadAll(iotest.ErrReader(errors.New("connection reset")), 10, "GET /x")
	if err == nil || errors.Is(err, ErrTooLarge) {
		t.Errorf("err = %v", err)
	}
}

func TestCapWriter(t *testing.T) {
	w := &CapWriter{What: "agent_control -l stdout", Limit: 4}
	_, _ = w.Write([]byte("abc"))
	if w.Err() != nil {
		t.Fatal("under the cap")
	}
	_, _ = w.Write([]byte("de"))
	if string(w.Bytes()) != "abcd" || !errors.Is(w.Err(), ErrTooLarge) || !strings.Contains(w.Err().Error(), "4 B cap") {
		t.Errorf("%q %v", w.Bytes(), w.Err())
	}
}

func TestSummary(t *testing.T) {
	page := []byte("<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>\n  503 Service &amp; Unavailable </title></head><body>" + strings.Repeat("<p>junk</p>", 500) + "</body></html>")
	if got := Summary(503, "text/html", page, 200); got != `HTML page "503 Service & Unavailable"` {
		t.Errorf("got %q", got)
	}
	if got := Summary(502, "", []byte("<html><body><h1>oops</h1></body></html>"), 200); got != "HTML page (502 Bad Gateway)" {
		t.Errorf("got %q", got)
	}
	if got := Summary(500, "text/plain", []byte("  internal\n error "), 200); got != "internal error" {
		t.Errorf("got %q", got)
	}
}

func TestRedirected(t *testing.T) {
	h := http.Header{"Location": {"https://admin:Secr3t@other.example.org:55000/"}}
	got := Redirected(302, h)
	if !strings.Contains(got, "redirected to https://other.example.org:55000/") || strings.Contains(got, "Secr3t") {
		t.Errorf("got %q", got)
	}
	if !IsRedirect(301) || IsRedirect(304) || IsRedirect(200) {
		t.Error("IsRedirect")
	}
}

func TestClassifyInterrupted(t *testing.T) {
	err := Classify("GET /", "http://127.0.0.1:9200", context.Canceled)
	if !errors.Is(err, ErrInterrupted) || errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("err = %v", err)
	}
}
