package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/output"
)

// TestChangeBegin: the one policy for a command that changes the stack.
func TestChangeBegin(t *testing.T) {
	calls := Calls("PUT /_cluster/settings {}", "POST /_flush")
	type lockLog struct{ taken, released int }
	mk := func(tty bool, stdin string, yes, dry bool, held error) (Change, *lockLog, func() string, func() string) {
		io, in, out, errOut := output.Test()
		io.SetTTY(tty, tty, tty)
		in.WriteString(stdin)
		l := &lockLog{}
		c := Change{IO: io, Output: "table", Yes: yes, DryRun: dry, Lock: func(context.Context) (func(), error) {
			if held != nil {
				return nil, held
			}
			l.taken++
			return func() { l.released++ }, nil
		}}
		return c, l, out.String, errOut.String
	}
	held := &lock.HeldError{Path: "/var/lib/siemctl/lock", Holder: &lock.Holder{PID: 42, Host: "h", Command: "siemctl upgrade apply --to 4.10.0", RunID: "r1"}}
	tests := []struct {
		name            string
		tty             bool
		stdin           string
		yes, dry        bool
		held            error
		proceed         bool
		code            int
		taken, released int
	}{
		{"no tty, no --yes", false, "", false, false, nil, false, 2, 1, 1},
		{"no tty, --yes", false, "", true, false, nil, true, 0, 1, 0},
		{"tty, answered y", true, "y\n", false, false, nil, true, 0, 1, 0},
		{"tty, answered n", true, "n\n", false, false, nil, false, 1, 1, 1},
		{"tty, no answer", true, "", false, false, nil, false, 1, 1, 1},
		{"dry run: no question, no lock", false, "", false, true, nil, false, 0, 0, 0},
		{"dry run while an upgrade runs", false, "", false, true, held, false, 0, 0, 0},
		{"locked", false, "", true, false, held, false, 6, 0, 0},
	}
	for _, tt := range tests {
		c, l, out, errOut := mk(tt.tty, tt.stdin, tt.yes, tt.dry, tt.held)
		release, proceed, err := c.Begin(context.Background(), "Change it?", calls)
		if proceed != tt.proceed || ExitCode(err) != tt.code || l.taken != tt.taken || l.released != tt.released {
			t.Errorf("%s: proceed %v err %v (exit %d) lock %+v", tt.name, proceed, err, ExitCode(err), *l)
		}
		if proceed {
			release()
			if l.released != 1 {
				t.Errorf("%s: release did not free the lock", tt.name)
			}
		}
		if tt.dry && (out() != "PUT /_cluster/settings {}\nPOST /_flush\n" || !strings.Contains(errOut(), "dry run: nothing is changed")) {
			t.Errorf("%s: out %q err %q", tt.name, out(), errOut())
		}
		if tt.tty && !tt.dry && !strings.Contains(errOut(), "Change it? [y/N]") {
			t.Errorf("%s: not asked: %q", tt.name, errOut())
		}
		if tt.held != nil && !tt.dry && (err == nil || !strings.Contains(err.Error(), "siemctl upgrade apply --to 4.10.0") || !strings.Contains(err.Error(), "run r1") || !strings.Contains(err.Error(), "pid 42")) {
			t.Errorf("%s: holder not named: %v", tt.name, err)
		}
	}
	if _, proceed, err := (Change{IO: output.System()}).Begin(context.Background(), "x", calls); proceed || !errors.Is(err, ErrNoLock) {
		t.Errorf("no lock func: %v %v", proceed, err)
	}
}

// TestHostLockIsUpgradeLock: Factory.Change takes the lock upgrade and
// rollback take (state_dir/lock), recording the command line as holder.
func TestHostLockIsUpgradeLock(t *testing.T) {
	d := t.TempDir()
	cfg := filepath.Join(d, "siemctl.yaml")
	if err := os.WriteFile(cfg, []byte("state_dir: "+d+"/state\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var seen *lock.Holder
	reg := func(root *cobra.Command, f *Factory) {
		grp := &cobra.Command{Use: "indexer"}
		var all bool
		c := &cobra.Command{Use: "flush", RunE: func(cmd *cobra.Command, args []string) error {
			release, _, err := f.Change(cmd, args, false).Begin(cmd.Context(), "x", Calls())
			if err != nil {
				return err
			}
			defer release()
			seen, _, _ = lock.Inspect(lock.HostPath(d + "/state"))
			return nil
		}}
		c.Flags().BoolVar(&all, "all", false, "")
		grp.AddCommand(c)
		root.AddCommand(grp)
	}
	io, _, _, errOut := output.Test()
	if code := Main(context.Background(), []string{"indexer", "flush", "--config", cfg, "--yes", "--all"}, Stdio{IO: io}, reg); code != 0 || seen == nil || seen.Command != "siemctl indexer flush --all" || seen.PID != os.Getpid() {
		t.Fatalf("exit %d holder %+v %s", code, seen, errOut)
	}
	if h, st, _ := lock.Inspect(lock.HostPath(d + "/state")); st != lock.Free {
		t.Errorf("not released: %v %v", h, st)
	}
}

// TestUnknownEnvWarned: a misspelt SIEMCTL_* variable is shown as a
// warning naming the nearest key when the config is loaded.
func TestUnknownEnvWarned(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "siemctl.yaml"), []byte("state_dir: "+d+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := func(root *cobra.Command, f *Factory) {
		root.AddCommand(&cobra.Command{Use: "cfg", RunE: func(*cobra.Command, []string) error { _, err := f.Config(); return err }})
	}
	io, _, out, errOut := output.Test()
	code := Main(context.Background(), []string{"cfg", "--config", filepath.Join(d, "siemctl.yaml")}, Stdio{IO: io, Env: []string{"SIEMCTL_INDEXER_UR=https://x:9200"}}, reg)
	if code != 0 || out.Len() != 0 || !strings.Contains(errOut.String(), "warning: environment variable SIEMCTL_INDEXER_UR is not a configuration key and is ignored; did you mean SIEMCTL_INDEXER_URL (indexer.url)?") {
		t.Errorf("exit %d stderr %q", code, errOut.String())
	}
}

// TestChangeVerb: the preamble of a changing verb refuses an output it
// cannot print (exit 2, naming the choices) before any change is built, and
// otherwise hands back the change policy with -o, --yes and --dry-run.
func TestChangeVerb(t *testing.T) {
	var got *Change
	reg := func(root *cobra.Command, f *Factory) {
		var dry bool
		c := &cobra.Command{Use: "flush", RunE: func(cmd *cobra.Command, args []string) error {
			change, err := f.ChangeVerb(cmd, args, dry)
			if err != nil {
				return err
			}
			got = &change
			return nil
		}}
		AddDryRunFlag(c, &dry)
		root.AddCommand(c)
	}
	io, _, _, errOut := output.Test()
	if code := Main(context.Background(), []string{"flush", "-o", "yaml"}, Stdio{IO: io}, reg); code != 2 || got != nil || !strings.Contains(errOut.String(), "-o yaml is not supported here; use one of: table, json") {
		t.Fatalf("exit %d change %+v stderr %q", code, got, errOut)
	}
	io, _, _, errOut = output.Test()
	if code := Main(context.Background(), []string{"flush", "-o", "json", "--yes", "--dry-run"}, Stdio{IO: io}, reg); code != 0 || got == nil || got.Output != "json" || !got.Yes || !got.DryRun || got.Lock == nil {
		t.Fatalf("exit %d change %+v stderr %q", code, got, errOut)
	}
}

// TestRun: a command runs its own code unless a test gave runF, which then
// gets the same options instead.
func TestRun(t *testing.T) {
	type opts struct{ got string }
	run := func(_ context.Context, o *opts) error { o.got = "run"; return nil }
	runF := func(_ context.Context, o *opts) error { o.got = "runF"; return errors.New("from runF") }
	o := &opts{}
	if err := Run(context.Background(), nil, run, o); err != nil || o.got != "run" {
		t.Fatalf("without runF: %v %q", err, o.got)
	}
	if err := Run(context.Background(), runF, run, o); err == nil || o.got != "runF" {
		t.Fatalf("with runF: %v %q", err, o.got)
	}
}
