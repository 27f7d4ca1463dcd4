package managertest

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// ListenQueue stands in for analysisd: a unixgram socket at its queue
// (install/queue/sockets/queue, where logcollector and siemctl's probe send
// events), closed when the test ends. Each event is one datagram
// "1:<location>:<line>".
func ListenQueue(t testing.TB, install string) *net.UnixConn {
	t.Helper()
	sock := filepath.Join(install, "queue", "sockets", "queue")
	if err := os.MkdirAll(filepath.Dir(sock), 0o750); err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}
