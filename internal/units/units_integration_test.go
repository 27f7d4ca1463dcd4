package units_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/units"
)

// TestPrivateManager drives a real private systemd --user manager.
func TestPrivateManager(t *testing.T) {
	p := startManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	sleepLog := filepath.Join(p.LogDir, "sleep.log")
	p.WriteUnit(t, "ut-sleep.service", fmt.Sprintf(`[Unit]
Description=unitstest sleeper
[Service]
ExecStartPre=/bin/echo pre-start line
ExecStart=/bin/sh -c 'echo started; exec sleep 300'
StandardOutput=append:%s
StandardError=append:%s
TimeoutStopSec=2
[Install]
WantedBy=default.target
`, sleepLog, sleepLog))
	p.WriteUnit(t, "ut-false.service", "[Service]\nExecStart=/bin/false\n")
	p.WriteUnit(t, "ut-oneshot-false.service", "[Service]\nType=oneshot\nExecStart=/bin/false\n")
	p.WriteUnit(t, "ut-stubborn.service", `[Service]
ExecStart=/bin/sh -c 'trap "" TERM; while :; do sleep 0.2; done'
TimeoutStopSec=1
`)

	// PollInterval: waits rely on signals alone.
	m, err := units.New(ctx, p.Address(), units.Options{Settle: 300 * time.Millisecond, PollInterval: time.Hour})
	if err != nil {
		t.Fatalf("New(%s): %v", p.Address(), err)
	}
	defer m.Close()
	if err := m.DaemonReload(ctx); err != nil {
		t.Fatalf("DaemonReload: %v", err)
	}

	t.Run("unknown unit", func(t *testing.T) {
		st, err := m.Status(ctx, "ut-nope")
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		if len(st) != 1 || st[0].Name != "ut-nope.service" || st[0].LoadState != "not-found" || st[0].Found() {
			t.Fatalf("Status(unknown) = %+v", st)
		}
		if err := m.Start(ctx, "ut-nope.service"); !errors.Is(err, units.ErrNoSuchUnit) {
			t.Fatalf("Start(unknown) = %v, want ErrNoSuchUnit", err)
		}
	})

	t.Run("start status stop", func(t *testing.T) {
		st, err := m.StartAndWait(ctx, "ut-sleep", 10*time.Second)
		if err != nil {
			t.Fatalf("StartAndWait: %v", err)
		}
		if st.ActiveState != units.Active || st.SubState != "running" || st.MainPID == 0 {
			t.Fatalf("after start: %+v", st)
		}
		all, err := m.Status(ctx, "ut-sleep.service")
		if err != nil {
			t.Fatal(err)
		}
		st = all[0]
		if st.LoadState != "loaded" || st.FragmentPath != filepath.Join(p.UnitDir, "ut-sleep.service") ||
			st.ActiveSince.IsZero() || st.Description != "unitstest sleeper" || st.Result != "success" {
			t.Fatalf("status: %+v", st)
		}
		if st.LogFile() != sleepLog {
			t.Fatalf("LogFile() = %q (StandardOutput %q), want %q", st.LogFile(), st.StandardOutput, sleepLog)
		}
		lines, err := units.LastLogLines(ctx, st, 5)
		if err != nil || !slices.Contains(lines, "pre-start line") {
			t.Fatalf("LastLogLines = %q, %v", lines, err)
		}
		pids, err := m.Processes(ctx, "ut-sleep")
		if err != nil {
			t.Fatalf("Processes: %v", err)
		}
		if !slices.Contains(pids, int(st.MainPID)) {
			t.Fatalf("Processes = %v, MainPID %d not among them (cgroup %s)", pids, st.MainPID, st.ControlGroup)
		}
		if !strings.Contains(st.ControlGroup, "lab-"+p.ID) {
			t.Fatalf("ControlGroup %q is not under the test manager's cgroup lab-%s", st.ControlGroup, p.ID)
		}

		// Restart: a new main process.
		st2, err := m.RestartAndWait(ctx, "ut-sleep", 10*time.Second)
		if err != nil {
			t.Fatalf("RestartAndWait: %v", err)
		}
		if st2.MainPID == 0 || st2.MainPID == st.MainPID {
			t.Fatalf("restart kept MainPID %d -> %d", st.MainPID, st2.MainPID)
		}
		if err := syscall.Kill(int(st.MainPID), 0); err == nil {
			t.Fatalf("old main process %d still alive after restart", st.MainPID)
		}

		if err := m.Stop(ctx, "ut-sleep"); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		all, err = m.Status(ctx, "ut-sleep")
		if err != nil {
			t.Fatal(err)
		}
		if all[0].ActiveState != units.Inactive || all[0].MainPID != 0 {
			t.Fatalf("after stop: %+v", all[0])
		}
		if pids, err := m.Processes(ctx, "ut-sleep"); err != nil || len(pids) != 0 {
			t.Fatalf("Processes after stop = %v, %v", pids, err)
		}
	})

	t.Run("wait times out", func(t *testing.T) {
		st, err := m.Wait(ctx, "ut-sleep", []string{units.Active}, 100*time.Millisecond)
		if !errors.Is(err, units.ErrWaitTimeout) {
			t.Fatalf("Wait = %v, want ErrWaitTimeout", err)
		}
		if st.ActiveState != units.Inactive {
			t.Fatalf("Wait status = %+v", st)
		}
	})

	t.Run("wait sees start from elsewhere", func(t *testing.T) {
		done := make(chan error, 1)
		var got units.UnitStatus
		go func() {
			var err error
			got, err = m.Wait(ctx, "ut-sleep", []string{units.Active}, 20*time.Second)
			done <- err
		}()
		// A second connection starts it, so only signals can tell the first.
		m2, err := units.New(ctx, p.Address())
		if err != nil {
			t.Fatal(err)
		}
		defer m2.Close()
		if err := m2.Start(ctx, "ut-sleep"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil || got.ActiveState != units.Active {
			t.Fatalf("Wait = %+v, %v", got, err)
		}
		if err := m2.Stop(ctx, "ut-sleep"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("simple service fails after done job", func(t *testing.T) {
		if err := m.ResetFailed(ctx, "ut-false"); err != nil {
			t.Fatal(err)
		}
		st, err := m.StartAndWait(ctx, "ut-false", 10*time.Second)
		if !errors.Is(err, units.ErrUnitFailed) {
			t.Fatalf("StartAndWait(ut-false) = %+v, %v; want ErrUnitFailed", st, err)
		}
		var se *units.StateError
		if !errors.As(err, &se) {
			t.Fatalf("error %T is not *StateError", err)
		}
		if se.Status.Result != "exit-code" || se.Status.ExecMainCode != 1 || se.Status.ExecMainStatus != 1 || se.Status.MainPID != 0 {
			t.Fatalf("failed status: %+v", se.Status)
		}
		if !strings.Contains(err.Error(), "exit-code (exit status 1)") {
			t.Fatalf("error text %q", err)
		}
		if err := m.ResetFailed(ctx, "ut-false"); err != nil {
			t.Fatal(err)
		}
		all, _ := m.Status(ctx, "ut-false")
		if all[0].ActiveState != units.Inactive || all[0].Result != "success" {
			t.Fatalf("after reset-failed: %+v", all[0])
		}
	})

	t.Run("oneshot job fails", func(t *testing.T) {
		err := m.Start(ctx, "ut-oneshot-false")
		var je *units.JobError
		if !errors.As(err, &je) || je.Result != units.JobFailed || je.Op != "start" {
			t.Fatalf("Start(oneshot false) = %v, want *JobError failed", err)
		}
		if !errors.Is(err, units.ErrUnitFailed) || je.Status.Result != "exit-code" {
			t.Fatalf("job error status: %+v", je.Status)
		}
		_ = m.ResetFailed(ctx, "ut-oneshot-false")
	})

	t.Run("stop timeout kills a service ignoring SIGTERM", func(t *testing.T) {
		st, err := m.StartAndWait(ctx, "ut-stubborn", 10*time.Second)
		if err != nil {
			t.Fatalf("StartAndWait: %v", err)
		}
		pids, err := m.Processes(ctx, "ut-stubborn")
		if err != nil || len(pids) == 0 {
			t.Fatalf("Processes = %v, %v", pids, err)
		}
		_ = m.Stop(ctx, "ut-stubborn") // the job result is not the point; the state is
		all, err := m.Status(ctx, "ut-stubborn")
		if err != nil {
			t.Fatal(err)
		}
		if all[0].ActiveState != units.Failed || all[0].Result != "timeout" {
			t.Fatalf("after stop of stubborn unit: %+v", all[0])
		}
		if left, err := m.Processes(ctx, "ut-stubborn"); err != nil || len(left) != 0 {
			t.Fatalf("processes left: %v, %v", left, err)
		}
		for _, pid := range append(pids, int(st.MainPID)) {
			if err := syscall.Kill(pid, 0); err == nil {
				t.Fatalf("process %d survived the stop", pid)
			}
		}
		_ = m.ResetFailed(ctx, "ut-stubborn")
	})

	t.Run("enable", func(t *testing.T) {
		changes, err := m.Enable(ctx, "ut-sleep")
		if err != nil {
			t.Fatalf("Enable: %v", err)
		}
		if len(changes) == 0 {
			t.Fatal("Enable made no changes")
		}
		all, _ := m.Status(ctx, "ut-sleep")
		if all[0].UnitFileState != "enabled" {
			t.Fatalf("UnitFileState = %q", all[0].UnitFileState)
		}
		link := filepath.Join(p.Dir, "config", "systemd", "user", "default.target.wants", "ut-sleep.service")
		if _, err := os.Lstat(link); err != nil {
			t.Fatalf("enable link: %v", err)
		}
		if err := m.Disable(ctx, "ut-sleep"); err != nil {
			t.Fatal(err)
		}
		all, _ = m.Status(ctx, "ut-sleep")
		if all[0].UnitFileState != "disabled" {
			t.Fatalf("after disable UnitFileState = %q", all[0].UnitFileState)
		}
	})

	t.Run("closed manager", func(t *testing.T) {
		m3, err := units.New(ctx, p.Address())
		if err != nil {
			t.Fatal(err)
		}
		m3.Close()
		if _, err := m3.Status(ctx, "ut-sleep"); err == nil {
			t.Fatal("Status on a closed manager succeeded")
		}
	})
}
