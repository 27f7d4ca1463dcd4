package hostfacts

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A real listener in this process: Holders names this PID and its command.
func TestHoldersRealListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	l, err := ListeningPorts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hs, err := l.Holders(context.Background(), "/proc", "tcp", port)
	if err != nil {
		t.Fatal(err)
	}
	h := hs[port]
	if len(h.Processes) != 1 || h.Processes[0].PID != os.Getpid() {
		t.Fatalf("holders of %d: %+v", port, h)
	}
	exe, _ := os.Executable()
	if !strings.Contains(h.Describe(), fmt.Sprintf("pid %d (", os.Getpid())) || !strings.Contains(h.Processes[0].Command, filepath.Base(exe)) {
		t.Errorf("describe %q (exe %s)", h.Describe(), exe)
	}
}

// /proc fixtures: net/tcp and tcp6 inodes, fd links, cmdline with NULs,
// a process whose fds cannot be read, a foreign holder judged.
func TestHoldersFixture(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(pid, fd int, target string) {
		t.Helper()
		dir := filepath.Join(root, fmt.Sprint(pid), "fd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, fmt.Sprint(fd))); err != nil {
			t.Fatal(err)
		}
	}
	// 127.0.0.1:9200 (0x23F0) inode 4711 held by 300 (python3 -m http.server 9200);
	// [::]:1514 (0x05EA) inode 4712 held by 400 (the manager); 55000 not listening (state 01).
	write("net/tcp", `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:23F0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4711 1 0000000000000000 100 0 0 10 0
   1: 0100007F:D6D8 0100007F:23F0 01 00000000:00000000 00:00000000 00000000     0        0 4799 1 0000000000000000 100 0 0 10 0
`)
	write("net/tcp6", `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:05EA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4712 1 0000000000000000 100 0 0 10 0
`)
	write("300/cmdline", "python3\x00-m\x00http.server\x009200\x00")
	link(300, 0, "/dev/null")
	link(300, 3, "socket:[4711]")
	write("400/cmdline", "")
	write("400/comm", "siem-remoted\n")
	link(400, 5, "socket:[4712]")
	link(500, 7, "socket:[9999]")
	l, err := ReadListening(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := l.Holders(context.Background(), root, "tcp", 9200, 1514, 55000)
	if err != nil {
		t.Fatal(err)
	}
	if got := hs[9200].Describe(); got != "pid 300 (python3 -m http.server 9200)" {
		t.Errorf("9200: %q", got)
	}
	if got := hs[1514].Describe(); got != "pid 400 (siem-remoted)" {
		t.Errorf("1514: %q", got)
	}
	if got := hs[55000]; len(got.Processes) != 0 {
		t.Errorf("55000: %+v", got)
	}
	v := JudgePorts([]ExpectedPort{{Port: 1514, Owner: "manager agents"}, {Port: 9200, Owner: "indexer"}}, nil, map[int]bool{9200: true, 1514: true})
	v.JudgeOwners(hs, map[string][]int{"indexer": {111, 112}, "manager": {399, 400}})
	f := v.Foreign()
	if len(f) != 1 || f[0].Port != 9200 || f[0].Holder.PIDs()[0] != 300 {
		t.Errorf("foreign: %+v", f)
	}
	// a component whose unit's processes are unknown is not judged
	v = JudgePorts([]ExpectedPort{{Port: 9200, Owner: "indexer"}}, nil, map[int]bool{9200: true})
	v.JudgeOwners(hs, nil)
	if len(v.Foreign()) != 0 || v.Ports[0].Holder == nil {
		t.Errorf("unjudged: %+v", v.Ports[0])
	}
}
