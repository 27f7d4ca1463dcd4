//go:build e2e

package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EUpBusyPort: a port the lab would bind is occupied; up fails at
// once, before anything starts, naming the port and the holder (issue 26
// item 9), and leaves no lab behind.
func TestE2EUpBusyPort(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("siemlab up needs root")
	}
	offset := shifted(t, 360)
	prof, err := ProfileFor("")
	if err != nil {
		t.Fatal(err)
	}
	port := prof.Ports(offset).Indexer
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("occupy %d: %v", port, err)
	}
	defer ln.Close()
	base := t.TempDir()
	if err := OpenParents(base); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "lab")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Up(ctx, Options{Dir: dir, PortOffset: offset})
	if !errors.Is(err, ErrPortBusy) {
		t.Fatalf("up with port %d held: %v", port, err)
	}
	want := fmt.Sprintf("tcp port %d (indexer HTTP) is held by pid %d", port, os.Getpid())
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%v\nlacks %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "lab.json")); err == nil {
		t.Errorf("a lab was recorded in %s", dir)
	}
}
