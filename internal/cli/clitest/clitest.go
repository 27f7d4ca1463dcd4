// Package clitest runs siemctl's commands in tests: the whole program
// through cli.Main on test streams (Main, Group), one command under the root
// for its global flags (ExecRoot) or on its own (Exec), and the flag parsing
// of a NewCmdX(f, runF) constructor alone (Parse); NoSecret checks that no
// secret reached what a run printed. It also holds the scenery every command
// test needs: files, a config and its secret files (WriteFile, WriteSecret,
// WriteConfig, LoadConfig), the host lock held as a running upgrade holds it
// (HoldLock), an address nobody listens on (ClosedAddr, ClosedURL), a server
// that accepts and never answers (Hang), a reader's output collected in the
// background (Tap), and a Factory wired to a test's client set (Factory).
package clitest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/testenv"
)

// Result is what one run of siemctl left behind.
type Result struct {
	Out, ErrOut string
	Code        int
}

// Group is the registrar (what cli.Main takes) of the one command group
// newCmd builds, e.g. Group(agents.NewCmdAgents).
func Group(newCmd func(*cli.Factory) *cobra.Command) cli.Registrar {
	return func(root *cobra.Command, f *cli.Factory) { root.AddCommand(newCmd(f)) }
}

// Main runs args through cli.Main with the commands reg adds, on test
// streams (every stream a terminal when tty; stdin holds a terminal's
// answers) and an empty environment.
func Main(ctx context.Context, reg cli.Registrar, tty bool, stdin string, args ...string) Result {
	io, in, out, errOut := output.Test()
	in.WriteString(stdin)
	io.SetTTY(tty, tty, tty)
	code := cli.Main(ctx, args, cli.Stdio{IO: io, Env: []string{}, Wire: factory.Wire}, reg)
	return Result{Out: out.String(), ErrOut: errOut.String(), Code: code}
}

// NoSecret fails t when text (from where) contains one of secrets.
func NoSecret(t testing.TB, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s contains a secret (%d bytes)", where, len(s))
		}
	}
}

// Exec runs cmd on its own with args (never the test binary's), its usage
// and error printing silenced, and returns its error.
func Exec(cmd *cobra.Command, args ...string) error {
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(append([]string{}, args...))
	return cmd.Execute()
}

// ExecRoot runs args on a root (the global flags and their pre-run) that
// holds cmd, writing to f's streams.
func ExecRoot(f *cli.Factory, cmd *cobra.Command, args ...string) error {
	root := cli.NewCmdRoot(f)
	root.AddCommand(cmd)
	root.SetArgs(append([]string{}, args...))
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	return root.ExecuteContext(context.Background())
}

// Parse runs the flag parsing of the command newCmd builds (under a root,
// for the global flags) with args and returns the options its runF was
// handed (the zero O when parsing failed first) and the error.
func Parse[O any](newCmd func(*cli.Factory, func(context.Context, O) error) *cobra.Command, args ...string) (O, error) {
	io, _, _, _ := output.Test()
	f := cli.NewFactory(io, nil)
	var got O
	cmd := newCmd(f, func(_ context.Context, o O) error { got = o; return nil })
	err := ExecRoot(f, cmd, append([]string{cmd.Name()}, args...)...)
	return got, err
}

// Factory is a production Factory on io whose client set is st (a test's
// fakes) and whose config is st's (the host lock lives in its state_dir);
// network calls get a 5s --timeout.
func Factory(io *output.IOStreams, st *factory.Clients) *cli.Factory {
	f := cli.NewFactory(io, nil)
	f.Global.Timeout = 5 * time.Second
	factory.WireSet(f, func(context.Context) (*factory.Clients, error) { return st, nil })
	f.Config = func() (*config.Config, error) { return st.Config, nil }
	return f
}

// WriteFile writes content to path with perm, creating the parent
// directories (testenv.WriteFile).
func WriteFile(t testing.TB, path, content string, perm os.FileMode) {
	t.Helper()
	testenv.WriteFile(t, path, content, perm)
}

// WriteSecret writes secret (and a newline, as an operator's file has) to
// dir/name, readable by its owner only, and returns the path: a
// password_file.
func WriteSecret(t testing.TB, dir, name, secret string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	WriteFile(t, p, secret+"\n", 0o600)
	return p
}

// WriteConfig writes yaml as dir/siemctl.yaml and returns its path.
func WriteConfig(t testing.TB, dir, yaml string) string {
	t.Helper()
	p := filepath.Join(dir, "siemctl.yaml")
	WriteFile(t, p, yaml, 0o600)
	return p
}

// The holder HoldLock records: a running upgrade.
const (
	HolderCommand = "siemctl upgrade apply --to 4.10.0"
	HolderRunID   = "20261121T101500Z-3f9a1c"
)

// HoldLock takes the host lock under stateDir as a running upgrade would
// (HolderCommand, run HolderRunID) and releases it when the test ends (or
// earlier, by Release).
func HoldLock(t testing.TB, stateDir string) *lock.Lock {
	t.Helper()
	l, err := lock.Acquire(context.Background(), lock.HostPath(stateDir), lock.Holder{Command: HolderCommand, RunID: HolderRunID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release() })
	return l
}

// LoadConfig writes yaml as dir/siemctl.yaml and loads it as `--config`
// would (the process environment is not read).
func LoadConfig(t testing.TB, dir, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Load(config.LoadOptions{Path: WriteConfig(t, dir, yaml), ExplicitPath: true})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
