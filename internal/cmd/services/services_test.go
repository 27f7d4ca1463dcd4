package services_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	svccmd "github.com/siemctl/siemctl/internal/cmd/services"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/units"
	"github.com/siemctl/siemctl/internal/units/unitstest"
)

var now = time.Date(2025, 3, 2, 9, 15, 0, 0, time.UTC)

// newFake is the shared fake with every unit running for a while, enabled,
// and an Enable that links shipper.service.
func newFake() *unitstest.Fake {
	f := unitstest.NewFake()
	for i, u := range unitstest.SiemUnits {
		f.State[u] = units.UnitStatus{Name: u, LoadState: "loaded", ActiveState: "active", SubState: "running", MainPID: uint32(1000 + i),
			NRestarts: uint32(i), ActiveSince: now.Add(-time.Duration(i+1) * 37 * time.Minute), UnitFileState: "enabled"}
	}
	f.Changes = []units.UnitFileChange{{Type: "symlink", Filename: "/etc/systemd/system/multi-user.target.wants/shipper.service", Destination: "/lib/systemd/system/shipper.service"}}
	return f
}

// actions are the recorded calls that change a unit (the fake also records
// the operation's process checks and reset-failed, which the operation's own
// table in internal/ops/services pins).
func actions(fu *unitstest.Fake) []string {
	var out []string
	for _, c := range fu.Calls {
		for _, verb := range []string{"start ", "restart ", "stop ", "enable "} {
			if strings.HasPrefix(c, verb) {
				out = append(out, c)
			}
		}
	}
	return out
}

var unitMap = map[string]string{"indexer": "siem-indexer.service", "manager": "siem-manager.service", "dashboard": "siem-dashboard.service", "shipper": "shipper.service"}

// hostLock is a fake host lock: held makes it fail like a lock an upgrade holds.
type hostLock struct {
	held     error
	taken    []string
	released int
}

func (h *hostLock) take(_ context.Context, command string) (func(), error) {
	if h.held != nil {
		return nil, h.held
	}
	h.taken = append(h.taken, command)
	return func() { h.released++ }, nil
}

func testFactory(io *output.IOStreams) *cli.Factory {
	return factoryLocked(io, &hostLock{})
}

func factoryLocked(io *output.IOStreams, h *hostLock) *cli.Factory {
	f := factory.New(io, nil)
	f.Now = func() time.Time { return now }
	f.HostLock = h.take
	return f
}

func zeroClock() time.Time { return now }

func TestNewCmdActionFlags(t *testing.T) {
	tests := []struct {
		args       []string
		verb       string
		yes        bool
		components []string
	}{
		{[]string{"stop", "manager", "shipper"}, "stop", false, []string{"manager", "shipper"}},
		{[]string{"restart", "--yes"}, "restart", true, nil},
		{[]string{"start", "all", "-o", "json"}, "start", false, []string{"all"}},
	}
	for _, tt := range tests {
		io, _, _, _ := output.Test()
		f := testFactory(io)
		var got *svccmd.ActionOptions
		grp := svccmd.NewCmdServices(f)
		grp.RemoveCommand(grp.Commands()...)
		capture := func(_ context.Context, o *svccmd.ActionOptions) error { got = o; return nil }
		grp.AddCommand(svccmd.NewCmdStart(f, capture), svccmd.NewCmdStop(f, capture), svccmd.NewCmdRestart(f, capture))
		if err := clitest.ExecRoot(f, grp, append([]string{"services"}, tt.args...)...); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got == nil || got.Action != tt.verb || got.Change.Yes != tt.yes || strings.Join(got.Components, ",") != strings.Join(tt.components, ",") {
			t.Errorf("%v: options %+v", tt.args, got)
		}
	}
}

func runStatus(t *testing.T, fu *unitstest.Fake, tty bool, outFmt string, comps ...string) (string, string, error) {
	t.Helper()
	io, _, out, errOut := output.Test()
	io.SetTTY(tty, tty, tty)
	f := testFactory(io)
	f.Global.Output = outFmt
	cmd := svccmd.NewCmdStatus(f, func(ctx context.Context, o *svccmd.StatusOptions) error {
		o.Units = func(context.Context) (services.Units, error) { return fu, nil }
		o.UnitMap = func() (map[string]string, error) { return unitMap, nil }
		return svccmd.RunStatus(ctx, o)
	})
	err := clitest.ExecRoot(f, cmd, append([]string{"status", "-o", outFmt}, comps...)...)
	return out.String(), errOut.String(), err
}

func TestRunStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tty    bool
		format string
	}{{"status_table", false, "table"}, {"status_tty", true, "table"}, {"status_json", false, "json"}} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runStatus(t, newFake(), tc.tty, tc.format)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, tc.name, []byte(out))
		})
	}
	t.Run("inactive unit exits 3", func(t *testing.T) {
		fu := newFake()
		fu.State["siem-manager.service"] = units.UnitStatus{Name: "siem-manager.service", LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "exit-code"}
		out, _, err := runStatus(t, fu, false, "table")
		if cli.ExitCode(err) != 3 || !strings.Contains(out, "manager\tsiem-manager.service\tfailed/failed") {
			t.Errorf("exit %d err %v\n%s", cli.ExitCode(err), err, out)
		}
	})
	t.Run("unknown component is a usage error and nothing is asked", func(t *testing.T) {
		fu := newFake()
		_, _, err := runStatus(t, fu, false, "table", "kibana")
		if cli.ExitCode(err) != 2 || len(fu.Calls) != 0 {
			t.Errorf("exit %d calls %v err %v", cli.ExitCode(err), fu.Calls, err)
		}
	})
}

func runAction(t *testing.T, fu *unitstest.Fake, tty bool, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return runActionLocked(t, fu, &hostLock{}, tty, stdin, args...)
}

func runActionLocked(t *testing.T, fu *unitstest.Fake, h *hostLock, tty bool, stdin string, args ...string) (string, string, error) {
	t.Helper()
	prep := func(o *svccmd.ActionOptions) {
		o.Units = func(context.Context) (services.Units, error) { return fu, nil }
		o.UnitMap = func() (map[string]string, error) { return unitMap, nil }
		o.LogLines = func(context.Context, units.UnitStatus, int) ([]string, error) {
			return []string{"siem-analysisd: CRITICAL: (1202): Configuration error at 'etc/ossec.conf'."}, nil
		}
		o.Runner.Now = zeroClock
		o.Explain = func(_ context.Context, r *services.Runner) error {
			r.Diagnose = func(ctx context.Context, c services.Component, st units.UnitStatus) diagnose.Report {
				return diagnose.Diagnose(ctx, diagnose.Input{Component: c.Name, Unit: st, LogLines: o.LogLines}, diagnose.Host{})
			}
			return nil
		}
	}
	return execRoot(h, tty, stdin, func(f *cli.Factory) *cobra.Command {
		grp := svccmd.NewCmdServices(f)
		grp.RemoveCommand(grp.Commands()...)
		for _, mk := range []func(*cli.Factory, func(context.Context, *svccmd.ActionOptions) error) *cobra.Command{svccmd.NewCmdStart, svccmd.NewCmdStop, svccmd.NewCmdRestart} {
			grp.AddCommand(mk(f, func(ctx context.Context, o *svccmd.ActionOptions) error { prep(o); return svccmd.RunAction(ctx, o) }))
		}
		return grp
	}, append([]string{"services"}, args...)...)
}

// execRoot runs args on a root holding the command add builds, on test
// streams (tty or not, stdin given) and the host lock h.
func execRoot(h *hostLock, tty bool, stdin string, add func(*cli.Factory) *cobra.Command, args ...string) (string, string, error) {
	io, in, out, errOut := output.Test()
	in.WriteString(stdin)
	io.SetTTY(tty, tty, tty)
	f := factoryLocked(io, h)
	err := clitest.ExecRoot(f, add(f), args...)
	return out.String(), errOut.String(), err
}

func TestRunAction(t *testing.T) {
	t.Run("start all in order, table and JSON", func(t *testing.T) {
		fu := newFake()
		out, errOut, err := runAction(t, fu, false, "", "start", "--yes")
		if err != nil {
			t.Fatal(err)
		}
		want := "start siem-indexer.service|start siem-manager.service|start siem-dashboard.service|start shipper.service"
		if got := strings.Join(actions(fu), "|"); got != want {
			t.Errorf("calls %s", got)
		}
		golden.Assert(t, "start_table", []byte(out))
		if !strings.Contains(errOut, "starting indexer (siem-indexer.service, wait up to 1m0s)") {
			t.Errorf("no progress on stderr: %s", errOut)
		}
		out, _, err = runAction(t, newFake(), false, "", "start", "-o", "json", "--yes")
		if err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, "start_json", []byte(out))
	})
	t.Run("failed unit explained, rest skipped, exit 1", func(t *testing.T) {
		fu := newFake()
		fu.FailOn["restart siem-manager.service"] = "exit-code"
		out, errOut, err := runAction(t, fu, false, "", "restart", "manager", "dashboard", "--yes")
		var ae *services.ActionError
		if !errors.As(err, &ae) || cli.ExitCode(err) != 1 {
			t.Fatalf("err %v (exit %d)", err, cli.ExitCode(err))
		}
		golden.Assert(t, "restart_failed_table", []byte(out))
		for _, w := range []string{"systemd result: exit-code (exit status 1)", "cause: systemd: exit-code (exit status 1)", "its log says: siem-analysisd: CRITICAL: (1202): Configuration error", "fix: "} {
			if !strings.Contains(errOut, w) {
				t.Errorf("stderr lacks %q:\n%s", w, errOut)
			}
		}
	})
	t.Run("every action needs confirmation", func(t *testing.T) {
		tests := []struct {
			name  string
			tty   bool
			stdin string
			args  []string
			code  int
			calls int
		}{
			{"no tty no yes", false, "", []string{"stop"}, 2, 0},
			{"tty declined", true, "n\n", []string{"stop", "all"}, 1, 0},
			{"tty accepted", true, "y\n", []string{"stop", "all"}, 0, 4},
			{"--yes", false, "", []string{"stop", "--yes"}, 0, 4},
			{"restart all no tty", false, "", []string{"restart"}, 2, 0},
			{"one unit off a tty needs --yes", false, "", []string{"stop", "shipper"}, 2, 0},
			{"restart one unit off a tty needs --yes", false, "", []string{"restart", "manager"}, 2, 0},
			{"start off a tty needs --yes", false, "", []string{"start", "shipper"}, 2, 0},
			{"start one unit on a tty declined", true, "n\n", []string{"start", "shipper"}, 1, 0},
			{"one unit --yes", false, "", []string{"stop", "shipper", "--yes"}, 0, 1},
			{"dry run asks nothing, changes nothing", false, "", []string{"restart", "all", "--dry-run"}, 0, 0},
		}
		for _, tt := range tests {
			fu := newFake()
			_, errOut, err := runAction(t, fu, tt.tty, tt.stdin, tt.args...)
			n := 0
			for _, c := range actions(fu) {
				if !strings.HasPrefix(c, "enable ") {
					n++
				}
			}
			if cli.ExitCode(err) != tt.code || n != tt.calls {
				t.Errorf("%s: exit %d (%v) calls %v; want %d, %d calls\n%s", tt.name, cli.ExitCode(err), err, fu.Calls, tt.code, tt.calls, errOut)
			}
		}
		fu := newFake()
		_, _, _ = runAction(t, fu, false, "", "stop", "--yes")
		if strings.Join(actions(fu), "|") != "stop shipper.service|stop siem-dashboard.service|stop siem-manager.service|stop siem-indexer.service" {
			t.Errorf("stop order %v", fu.Calls)
		}
	})
	t.Run("dry run prints each unit job in order", func(t *testing.T) {
		fu := newFake()
		h := &hostLock{}
		out, errOut, err := runActionLocked(t, fu, h, false, "", "stop", "--dry-run")
		want := "systemd StopUnit shipper.service (replace), wait up to 30s for inactive and its processes gone\n" +
			"systemd StopUnit siem-dashboard.service (replace), wait up to 1m0s for inactive and its processes gone\n" +
			"systemd StopUnit siem-manager.service (replace), wait up to 30s for inactive and its processes gone\n" +
			"systemd StopUnit siem-indexer.service (replace), wait up to 1m0s for inactive and its processes gone\n"
		if err != nil || out != want || len(fu.Calls) != 0 || len(h.taken) != 0 || !strings.Contains(errOut, "dry run: nothing is changed") {
			t.Errorf("err %v calls %v lock %v\nout %q\nerr %s", err, fu.Calls, h.taken, out, errOut)
		}
		out, _, err = runActionLocked(t, fu, h, false, "", "start", "manager", "indexer", "--dry-run", "-o", "json")
		if err != nil || !strings.Contains(out, `"systemd StartUnit siem-indexer.service (replace), wait up to 1m0s for active",`) || len(fu.Calls) != 0 {
			t.Errorf("json dry run: %v %v\n%s", err, fu.Calls, out)
		}
	})
	t.Run("host lock: taken around the action, held by an upgrade means exit 6 and nothing done", func(t *testing.T) {
		fu := newFake()
		h := &hostLock{}
		if _, _, err := runActionLocked(t, fu, h, false, "", "restart", "manager", "--yes"); err != nil || strings.Join(h.taken, "|") != "siemctl services restart manager" || h.released != 1 {
			t.Errorf("err %v taken %v released %d", err, h.taken, h.released)
		}
		fu = newFake()
		h = &hostLock{held: &lock.HeldError{Path: "/var/lib/siemctl/lock", Holder: &lock.Holder{PID: 4242, Host: "siem1", Command: "siemctl upgrade apply --to 4.10.0", RunID: "20261121T101500Z-3f9a1c"}}}
		for _, args := range [][]string{{"start", "--yes"}, {"stop", "shipper", "--yes"}, {"restart", "all", "--yes"}} {
			_, _, err := runActionLocked(t, fu, h, false, "", args...)
			if cli.ExitCode(err) != 6 || len(fu.Calls) != 0 {
				t.Errorf("%v: exit %d calls %v", args, cli.ExitCode(err), fu.Calls)
			}
			for _, w := range []string{"pid 4242", "siemctl upgrade apply --to 4.10.0", "run 20261121T101500Z-3f9a1c"} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%v: %v lacks %q", args, err, w)
				}
			}
		}
	})
	t.Run("bad component: usage error, nothing sent", func(t *testing.T) {
		fu := newFake()
		_, _, err := runAction(t, fu, false, "", "start", "indexer", "elastic")
		if cli.ExitCode(err) != 2 || len(fu.Calls) != 0 || !strings.Contains(err.Error(), `unknown component "elastic"`) {
			t.Errorf("exit %d err %v calls %v", cli.ExitCode(err), err, fu.Calls)
		}
	})
}

func runEnable(t *testing.T, fu *unitstest.Fake, h *hostLock, tty bool, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return execRoot(h, tty, stdin, func(f *cli.Factory) *cobra.Command {
		return svccmd.NewCmdEnable(f, func(ctx context.Context, o *svccmd.EnableOptions) error {
			o.Units = func(context.Context) (services.Units, error) { return fu, nil }
			o.UnitMap = func() (map[string]string, error) { return unitMap, nil }
			return svccmd.RunEnable(ctx, o)
		})
	}, append([]string{"enable"}, args...)...)
}

func TestRunEnable(t *testing.T) {
	fu, h := newFake(), &hostLock{}
	out, _, err := runEnable(t, fu, h, false, "", "shipper", "--yes")
	if err != nil || strings.Join(actions(fu), "|") != "enable shipper.service" || len(h.taken) != 1 || h.released != 1 {
		t.Fatalf("%v %v %v", err, fu.Calls, h)
	}
	golden.Assert(t, "enable_table", []byte(out))

	// Off a terminal without --yes, on a terminal declined, and a dry run: nothing enabled.
	fu = newFake()
	if _, _, err := runEnable(t, fu, h, false, "", "shipper"); cli.ExitCode(err) != 2 || len(fu.Calls) != 0 {
		t.Errorf("no --yes: %v %v", err, fu.Calls)
	}
	if _, errOut, err := runEnable(t, fu, h, true, "n\n"); !errors.Is(err, output.ErrDeclined) || len(fu.Calls) != 0 || !strings.Contains(errOut, "Enable siem-indexer.service, siem-manager.service, siem-dashboard.service, shipper.service at boot? [y/N]") {
		t.Errorf("declined: %v %v %s", err, fu.Calls, errOut)
	}
	out, _, err = runEnable(t, fu, h, false, "", "--dry-run")
	if err != nil || len(fu.Calls) != 0 || out != "systemd EnableUnitFiles siem-indexer.service siem-manager.service siem-dashboard.service shipper.service, then Reload if links changed\n" {
		t.Errorf("dry run: %v %v %q", err, fu.Calls, out)
	}
	h.held = &lock.HeldError{Path: "/var/lib/siemctl/lock", Holder: &lock.Holder{PID: 7, Host: "siem1", Command: "siemctl rollback", RunID: "r1"}}
	if _, _, err := runEnable(t, fu, h, false, "", "--yes"); cli.ExitCode(err) != 6 || len(fu.Calls) != 0 {
		t.Errorf("locked: %v %v", err, fu.Calls)
	}
}

// A host's start_wait keys bound its starts: the progress line says the wait, the unit job
// gets it; the dry run lists it.
func TestRunActionHostStartWaits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"start", "indexer", "--yes"}, "starting indexer (siem-indexer.service, wait up to 3m0s)"},
		{[]string{"start", "indexer", "--dry-run"}, "systemd StartUnit siem-indexer.service (replace), wait up to 3m0s for active"},
	} {
		fu := newFake()
		fu.Set(unitstest.Dead("siem-indexer.service"))
		out, errOut, err := execRoot(&hostLock{}, false, "", func(f *cli.Factory) *cobra.Command {
			grp := svccmd.NewCmdServices(f)
			grp.RemoveCommand(grp.Commands()...)
			grp.AddCommand(svccmd.NewCmdStart(f, func(ctx context.Context, o *svccmd.ActionOptions) error {
				o.Units = func(context.Context) (services.Units, error) { return fu, nil }
				o.UnitMap = func() (map[string]string, error) { return unitMap, nil }
				o.StartWaits = func() (map[string]time.Duration, error) {
					return map[string]time.Duration{"indexer": 3 * time.Minute, "manager": 30 * time.Second}, nil
				}
				o.Runner.Now = zeroClock
				return svccmd.RunAction(ctx, o)
			}))
			return grp
		}, append([]string{"services"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, errOut)
		}
		if !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: output lacks %q:\n%s%s", tc.args, tc.want, out, errOut)
		}
		if tc.args[2] == "--yes" && fu.Timeouts["start siem-indexer.service"] != 3*time.Minute {
			t.Errorf("unit job wait %s, want 3m0s", fu.Timeouts["start siem-indexer.service"])
		}
	}
}
