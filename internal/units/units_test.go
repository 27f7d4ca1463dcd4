package units

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/testenv"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"siem-indexer", "siem-indexer.service"},
		{"siem-indexer.service", "siem-indexer.service"},
		{"default.target", "default.target"},
		{"getty@tty1", "getty@tty1.service"},
		{"app.slice", "app.slice"},
		{"foo.bar", "foo.bar.service"},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTypeInterface(t *testing.T) {
	for in, want := range map[string]string{"a.service": "Service", "b.socket": "Socket", "c.target": "Target", "nodot": ""} {
		if got := typeInterface(in); got != want {
			t.Errorf("typeInterface(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnitStatusHelpers(t *testing.T) {
	tests := []struct {
		name    string
		st      UnitStatus
		found   bool
		active  bool
		failure string
		logFile string
	}{
		{"not found", UnitStatus{LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}, false, false, "inactive/dead", ""},
		{"running", UnitStatus{LoadState: "loaded", ActiveState: "active", SubState: "running", Result: "success", StandardOutput: "append:/var/log/x.log"}, true, true, "active/running", "/var/log/x.log"},
		{"exit code", UnitStatus{LoadState: "loaded", ActiveState: "failed", Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 3, StandardOutput: "journal"}, true, false, "exit-code (exit status 3)", ""},
		{"signal", UnitStatus{LoadState: "loaded", ActiveState: "failed", Result: "signal", ExecMainCode: 2, ExecMainStatus: 9, StandardOutput: "journal", StandardError: "file:/e.log"}, true, false, "signal (signal 9)", "/e.log"},
		{"timeout", UnitStatus{LoadState: "loaded", ActiveState: "failed", Result: "timeout", StandardOutput: "fd:foo"}, true, false, "timeout", ""},
		{"reloading", UnitStatus{LoadState: "loaded", ActiveState: "reloading", StandardOutput: "truncate:/t"}, true, true, "reloading/", "/t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Found(); got != tt.found {
				t.Errorf("Found = %v", got)
			}
			if got := tt.st.IsActive(); got != tt.active {
				t.Errorf("IsActive = %v", got)
			}
			if got := tt.st.Failure(); got != tt.failure {
				t.Errorf("Failure = %q, want %q", got, tt.failure)
			}
			if got := tt.st.LogFile(); got != tt.logFile {
				t.Errorf("LogFile = %q, want %q", got, tt.logFile)
			}
		})
	}
}

func TestApplyProps(t *testing.T) {
	var st UnitStatus
	applyUnitProps(&st, map[string]any{
		"LoadState": "loaded", "ActiveState": "active", "SubState": "running", "UnitFileState": "enabled",
		"FragmentPath": "/etc/systemd/system/x.service", "ActiveEnterTimestamp": uint64(1700000000123456),
		"StateChangeTimestamp": uint64(0), "DropInPaths": []string{"/a.conf"},
	})
	applyTypeProps(&st, map[string]any{
		"MainPID": uint32(42), "Result": "success", "ExecMainCode": int32(0), "ExecMainStatus": int32(0),
		"NRestarts": uint32(3), "ControlGroup": "/system.slice/x.service", "StandardOutput": "fd", "StandardOutputFileDescriptorName": "stdout",
		"StandardError": "inherit",
	})
	if st.ActiveSince.UnixMicro() != 1700000000123456 || !st.StateChangedAt.IsZero() {
		t.Errorf("timestamps: %v %v", st.ActiveSince, st.StateChangedAt)
	}
	if st.MainPID != 42 || st.NRestarts != 3 || st.StandardOutput != "fd:stdout" || st.StandardError != "inherit" ||
		st.ControlGroup != "/system.slice/x.service" || !slices.Equal(st.DropInPaths, []string{"/a.conf"}) {
		t.Errorf("status: %+v", st)
	}
}

func TestFillOutputPaths(t *testing.T) {
	dir := t.TempDir()
	frag := filepath.Join(dir, "x.service")
	drop := filepath.Join(dir, "override.conf")
	os.WriteFile(frag, []byte("[Unit]\nStandardOutput=append:/wrong-section\n[Service]\nExecStart=/bin/true\n# StandardOutput=append:/commented\nStandardOutput=append:/first.log\nStandardError=journal\n"), 0o644)
	os.WriteFile(drop, []byte("[Service]\nStandardOutput = append:/override.log\n"), 0o644)
	st := UnitStatus{FragmentPath: frag, DropInPaths: []string{drop}, StandardOutput: "append", StandardError: "journal"}
	fillOutputPaths(&st)
	if st.StandardOutput != "append:/override.log" || st.StandardError != "journal" {
		t.Fatalf("got %q %q", st.StandardOutput, st.StandardError)
	}
	st = UnitStatus{FragmentPath: filepath.Join(dir, "missing"), StandardOutput: "file"}
	fillOutputPaths(&st)
	if st.StandardOutput != "file" {
		t.Fatalf("missing unit file changed mode to %q", st.StandardOutput)
	}
}

func TestCgroupPIDs(t *testing.T) {
	root1, root2 := t.TempDir(), t.TempDir()
	cg := "/lab-x/app.slice/a.service"
	mk := func(root, sub, content string) {
		d := filepath.Join(root, cg, sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(content), 0o644)
	}
	mk(root1, "", "12\n7\n")
	mk(root1, "child", "99\n")
	mk(root2, "", "7\n12\n")
	got, err := cgroupPIDs([]string{root1, root2, filepath.Join(t.TempDir(), "absent")}, cg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{7, 12, 99}) {
		t.Fatalf("cgroupPIDs = %v", got)
	}
	if got, err := cgroupPIDs([]string{root1}, "/lab-x/gone.service"); err != nil || len(got) != 0 {
		t.Fatalf("absent cgroup = %v, %v", got, err)
	}
	if _, err := cgroupPIDs([]string{root1}, "/../../etc"); err == nil {
		t.Fatal("path escaping the hierarchy accepted")
	}
}

func TestTailFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte("one\ntwo\r\nthree\nfour\n"), 0o644)
	tests := []struct {
		n    int
		want []string
	}{
		{2, []string{"three", "four"}},
		{10, []string{"one", "two", "three", "four"}},
	}
	for _, tt := range tests {
		got, err := tailFile(p, tt.n)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("tailFile(%d) = %q, %v", tt.n, got, err)
		}
	}
	big := filepath.Join(t.TempDir(), "big")
	var b strings.Builder
	for b.Len() < 2<<20 {
		b.WriteString("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n")
	}
	b.WriteString("last line\n")
	os.WriteFile(big, []byte(b.String()), 0o644)
	got, err := tailFile(big, 1)
	if err != nil || !slices.Equal(got, []string{"last line"}) {
		t.Fatalf("tailFile(big) = %q, %v", got, err)
	}
}

func TestLastLogLines(t *testing.T) {
	dir := t.TempDir()
	logf := filepath.Join(dir, "svc.log")
	testenv.WriteFile(t, logf, "a\nb\nc\n", 0o644)
	fake := filepath.Join(dir, "journalctl")
	// The fake journalctl prints its argv so the test sees the exact call.
	testenv.WriteFile(t, fake, "#!/bin/sh\necho \"args: $*\"\necho line2\n", 0o755)
	noEntries := filepath.Join(dir, "journalctl-empty")
	testenv.WriteFile(t, noEntries, "#!/bin/sh\necho '-- No entries --'\n", 0o755)
	failing := filepath.Join(dir, "journalctl-fail")
	testenv.WriteFile(t, failing, "#!/bin/sh\necho 'Failed to open journal' >&2\nexit 1\n", 0o755)
	// -n bounds lines, not bytes: one 50 MB line is refused at the cap.
	huge := filepath.Join(dir, "journalctl-huge")
	testenv.WriteFile(t, huge, "#!/bin/sh\nhead -c 50000000 /dev/zero | tr '\\0' x\n", 0o755)
	ctx := context.Background()

	tests := []struct {
		name    string
		st      UnitStatus
		bin     string
		n       int
		want    []string
		wantErr string
	}{
		{"file", UnitStatus{Name: "x.service", StandardOutput: "append:" + logf}, fake, 2, []string{"b", "c"}, ""},
		{"journal", UnitStatus{Name: "x.service", StandardOutput: "journal"}, fake, 5, []string{"args: -u x.service -n 5 --no-pager -o cat", "line2"}, ""},
		{"journal trims to n", UnitStatus{Name: "x.service"}, fake, 1, []string{"line2"}, ""},
		{"no entries", UnitStatus{Name: "x.service"}, noEntries, 3, nil, ""},
		{"journal fails", UnitStatus{Name: "x.service"}, failing, 3, nil, "Failed to open journal"},
		{"missing file", UnitStatus{Name: "x.service", StandardOutput: "file:" + filepath.Join(dir, "nope")}, fake, 3, nil, "no such file"},
		{"zero", UnitStatus{Name: "x.service"}, fake, 0, nil, ""},
		{"huge line", UnitStatus{Name: "x.service"}, huge, 3, nil, "-u x.service -n 3 --no-pager -o cat stdout: answer larger than the 1 MiB cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lastLogLines(ctx, tt.st, tt.n, tt.bin)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestNewUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "systemd", "private")
	_, err := New(context.Background(), "unix:path="+sock)
	if !errors.Is(err, netclient.ErrUnreachable) {
		t.Fatalf("New(missing socket) = %v, want ErrUnreachable", err)
	}
	var ne *netclient.Error
	if !errors.As(err, &ne) || !strings.Contains(ne.URL, sock) {
		t.Fatalf("error %#v does not name the address", err)
	}
}

func TestConnectErrorKinds(t *testing.T) {
	tests := []struct {
		err  error
		want error
	}{
		{&os.PathError{Op: "dial", Path: "/x", Err: os.ErrPermission}, netclient.ErrForbidden},
		{&net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}, netclient.ErrForbidden},
		{&net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ENOENT)}, netclient.ErrUnreachable},
		{errors.New("dbus: authentication failed"), netclient.ErrForbidden},
		{context.DeadlineExceeded, netclient.ErrTimeout},
		{errors.New("connection refused"), netclient.ErrUnreachable},
	}
	for _, tt := range tests {
		if got := connectError("unix:path=/x", tt.err); !errors.Is(got, tt.want) {
			t.Errorf("connectError(%v) = %v, want kind %v", tt.err, got, tt.want)
		}
	}
}

func TestErrorsText(t *testing.T) {
	je := &JobError{Op: "start", Unit: "a.service", Result: "failed", Status: UnitStatus{ActiveState: "failed", Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 2}}
	if je.Error() != "start a.service: job failed: exit-code (exit status 2)" || !errors.Is(je, ErrUnitFailed) {
		t.Errorf("JobError: %q", je)
	}
	dep := &JobError{Op: "start", Unit: "a.service", Result: "dependency", Status: UnitStatus{ActiveState: "inactive"}}
	if errors.Is(dep, ErrUnitFailed) {
		t.Error("dependency job on inactive unit matches ErrUnitFailed")
	}
	se := &StateError{Unit: "a.service", Want: []string{"active"}, Status: UnitStatus{ActiveState: "activating", SubState: "start"}, Kind: ErrWaitTimeout}
	if !errors.Is(se, ErrWaitTimeout) || !strings.Contains(se.Error(), "want active, is activating/start") {
		t.Errorf("StateError: %q", se)
	}
}

func TestNewSystemManagerAbsent(t *testing.T) {
	if _, err := os.Stat("/run/systemd/private"); err == nil {
		t.Skip("this host runs systemd: the system manager is reachable")
	}
	_, err := New(context.Background(), "")
	if !errors.Is(err, netclient.ErrUnreachable) || !strings.Contains(err.Error(), SystemAddress) {
		t.Fatalf("New(\"\") without systemd = %v", err)
	}
}
