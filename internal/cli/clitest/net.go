package clitest

import (
	"bytes"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ClosedAddr is a loopback host:port nobody listens on (connections are
// refused).
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// ClosedURL is an http URL nobody listens on.
func ClosedURL(t testing.TB) string {
	t.Helper()
	return "http://" + ClosedAddr(t)
}

// Hung is a server that accepts connections, reads what they send and never
// answers: a hung service. It closes when the test ends.
type Hung struct {
	// Addr is the loopback host:port ("tcp") or the socket's path ("unix").
	Addr string

	mu    sync.Mutex
	conns []net.Conn
	taps  []*Tap
}

// Hang starts a hung server on network "tcp" (loopback) or "unix" (a socket
// in a temp dir, e.g. a hung systemd).
func Hang(t testing.TB, network string) *Hung {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "private")
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	h := &Hung{Addr: l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns, h.taps = append(h.conns, c), append(h.taps, NewTap(c))
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	return h
}

// Received is everything the server has read so far, connection after
// connection.
func (h *Hung) Received() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, tp := range h.taps {
		b.WriteString(tp.String())
	}
	return b.String()
}

// Tap reads r in the background until a read fails (r closed or at its
// end), keeping what it read: a test's view of a connection or a terminal.
// Its methods are safe while it reads.
type Tap struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

// NewTap starts reading r.
func NewTap(r io.Reader) *Tap {
	tp := &Tap{done: make(chan struct{})}
	go func() {
		defer close(tp.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			tp.mu.Lock()
			tp.buf.Write(b[:n])
			tp.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return tp
}

// String is everything read so far.
func (tp *Tap) String() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.buf.String()
}

// Done is closed once a read failed.
func (tp *Tap) Done() <-chan struct{} { return tp.done }
