package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// A port the lab would bind, held by this test process: up refuses before
// starting anything, naming the port, what needs it and the holder's PID.
func TestCheckPortsFree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()

	l := &Lab{core: core{st: &State{Ports: Ports{Indexer: freePort, Transport: port}}}}
	err = l.checkPortsFree(context.Background())
	if !errors.Is(err, ErrPortBusy) {
		t.Fatalf("err = %v, want ErrPortBusy", err)
	}
	for _, want := range []string{fmt.Sprintf("tcp port %d (indexer transport) is held by pid %d", port, os.Getpid()), "--port-offset"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), fmt.Sprint(freePort)) {
		t.Errorf("names the free port: %v", err)
	}
	ln.Close()
	if err := l.checkPortsFree(context.Background()); err != nil {
		t.Errorf("all free: %v", err)
	}
}
