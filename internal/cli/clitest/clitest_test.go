package clitest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/lock"
)

// The scenery does what the command tests rely on: a hung server keeps what
// it was sent and never answers, a closed address refuses, the lock is held
// under the upgrade's name and free again after the test's Release.
func TestScenery(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		h := clitest.Hang(t, network)
		c, err := net.Dial(network, h.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the hung server answered: %d %v", network, n, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for h.Received() != "GET / HTTP/1.1\r\n\r\n" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := h.Received(); got != "GET / HTTP/1.1\r\n\r\n" {
			t.Errorf("%s: received %q", network, got)
		}
		c.Close()
	}
	if c, err := net.Dial("tcp", clitest.ClosedAddr(t)); err == nil {
		c.Close()
		t.Error("the closed address accepted a connection")
	}

	state := t.TempDir()
	held := clitest.HoldLock(t, state)
	h, st, err := lock.Inspect(lock.HostPath(state))
	if err != nil || st == lock.Free || h == nil || h.Command != clitest.HolderCommand || h.RunID != clitest.HolderRunID {
		t.Fatalf("held lock: %+v %v %v", h, st, err)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if _, st, err := lock.Inspect(lock.HostPath(state)); err != nil || st != lock.Free {
		t.Errorf("after Release: %v %v", st, err)
	}

	cfg := clitest.LoadConfig(t, state, "state_dir: "+state+"/s\nindexer: {password_file: "+clitest.WriteSecret(t, state, "pw", "x")+"}\n")
	if cfg.StateDir != filepath.Join(state, "s") {
		t.Errorf("state_dir %s", cfg.StateDir)
	}
	if fi, err := os.Stat(filepath.Join(state, "pw")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file: %v %v", fi, err)
	}
}

type opts struct{ Name string }

func newCmdEcho(f *cli.Factory, runF func(context.Context, *opts) error) *cobra.Command {
	o := &opts{}
	cmd := &cobra.Command{Use: "echo", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		if o.Name == "" {
			return cli.FlagErrorf("--name is required")
		}
		return cli.Run(cmd.Context(), runF, func(_ context.Context, o *opts) error {
			_, err := f.IO.Out.Write([]byte("hello " + o.Name + "\n"))
			return err
		}, o)
	}}
	cmd.Flags().StringVar(&o.Name, "name", "", "who")
	return cmd
}

// Parse hands back the options, or the usage error before anything ran;
// Main and Exec run the command itself.
func TestRunners(t *testing.T) {
	if got, err := clitest.Parse(newCmdEcho, "--name", "ada"); err != nil || got == nil || got.Name != "ada" {
		t.Errorf("parse: %+v %v", got, err)
	}
	if got, err := clitest.Parse(newCmdEcho); cli.ExitCode(err) != cli.ExitUsage || got != nil {
		t.Errorf("parse without --name: %+v %v", got, err)
	}
	reg := clitest.Group(func(f *cli.Factory) *cobra.Command { return newCmdEcho(f, nil) })
	if r := clitest.Main(context.Background(), reg, false, "", "echo", "--name", "ada"); r.Code != 0 || r.Out != "hello ada\n" {
		t.Errorf("main: %+v", r)
	}
	if r := clitest.Main(context.Background(), reg, false, "", "echo"); r.Code != cli.ExitUsage || !strings.Contains(r.ErrOut, "--name is required") {
		t.Errorf("main without --name: %+v", r)
	}
}
