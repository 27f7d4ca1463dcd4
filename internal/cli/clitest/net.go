package clitest

import (
	"bytes"
	"net"
	"path/filepath"
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
	got   bytes.Buffer
	conns []net.Conn
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
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			go h.read(c)
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

func (h *Hung) read(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		h.mu.Lock()
		h.got.Write(buf[:n])
		h.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Received is everything the server has read so far.
func (h *Hung) Received() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got.String()
}
