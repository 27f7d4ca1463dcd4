package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
)

func TestSystemdStartStopUnit(t *testing.T) {
	testenv.PrivateSystemd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	units := filepath.Join(dir, "units")
	if err := os.MkdirAll(units, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "out.log")
	unit := fmt.Sprintf("[Service]\nExecStart=/bin/sh -c 'echo started; exec sleep 300'\nStandardOutput=append:%s\nStandardError=append:%s\nTimeoutStopSec=2\n", marker, marker)
	if err := os.WriteFile(filepath.Join(units, "labtest.service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	id := "t" + LabID(dir)
	sd, err := StartSystemd(ctx, SystemdOptions{Dir: dir, ID: id, UnitPath: []string{units}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = sd.Stop(context.Background())
		}
	})
	conn, err := sd.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := StartUnit(ctx, conn, "labtest.service"); err != nil {
		t.Fatal(err)
	}
	st, err := UnitStatus(ctx, conn, "labtest.service")
	if err != nil {
		t.Fatal(err)
	}
	if st.ActiveState != "active" || st.MainPID == 0 {
		t.Fatalf("state after start = %+v, want active with a main PID", st)
	}
	// The service runs inside the lab's own cgroup.
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", st.MainPID))
	if err != nil {
		t.Fatal(err)
	}
	if !sd.pidInLab(st.MainPID) {
		t.Fatalf("service pid %d not in lab-%s: %s", st.MainPID, id, cg)
	}
	if err := StopUnit(ctx, conn, "labtest.service"); err != nil {
		t.Fatal(err)
	}
	if st, _ = UnitStatus(ctx, conn, "labtest.service"); st.ActiveState != "inactive" {
		t.Fatalf("state after stop = %+v", st)
	}
	if err := StartUnit(ctx, conn, "labtest.service"); err != nil {
		t.Fatal(err)
	}
	st, _ = UnitStatus(ctx, conn, "labtest.service")
	svcPID := st.MainPID
	if err := sd.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for _, pid := range []int{sd.PID, svcPID} {
		if err := syscall.Kill(pid, 0); err == nil {
			if data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); len(data) > 0 && !isZombie(data) {
				t.Errorf("pid %d still alive after Stop", pid)
			}
		}
	}
	for _, d := range sd.CgroupDirs() {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s left behind", d)
		}
	}
	// Idempotent.
	if err := sd.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func isZombie(stat []byte) bool {
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' && i+2 < len(stat) {
			return stat[i+2] == 'Z'
		}
	}
	return false
}
