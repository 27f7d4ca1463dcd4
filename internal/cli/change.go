package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/output"
)

// Change is siemctl's one policy for a command that changes the stack
// (docs/commands.md): with --dry-run it prints each call it would make and
// changes nothing (no question, no lock); otherwise it takes the host lock
// that upgrade and rollback take (exit 6 naming the holder while one runs)
// and asks on a terminal, or needs --yes off one.
type Change struct {
	IO     *output.IOStreams
	Output string // table | json
	Yes    bool
	DryRun bool
	// Lock takes the host lock; release frees it.
	Lock func(ctx context.Context) (release func(), err error)
}

// ErrNoLock: a Change built without a lock func (a wiring bug, never a
// reason to change the stack unlocked).
var ErrNoLock = errors.New("no host lock configured for this change")

// Begin applies the policy before a change. calls lists what the command
// would do, one line per call (method + path, unit job, file); it is called
// only for a dry run and may read, never change. After a dry run proceed is
// false and nothing was changed; otherwise the caller changes the stack and
// then calls release.
func (c Change) Begin(ctx context.Context, question string, calls func() ([]string, error)) (release func(), proceed bool, err error) {
	if c.DryRun {
		lines, err := calls()
		if err != nil {
			return nil, false, err
		}
		return func() {}, false, c.printDryRun(lines)
	}
	release, err = c.Hold(ctx)
	if err != nil {
		return nil, false, err
	}
	if err := c.Ask(question); err != nil {
		release()
		return nil, false, err
	}
	return release, true, nil
}

// Hold takes the host lock of a change that is not a dry run, for a
// command that must read the stack under the lock before it can ask its
// question (Ask); Begin is Hold then Ask.
func (c Change) Hold(ctx context.Context) (release func(), err error) {
	if c.Lock == nil {
		return nil, ErrNoLock
	}
	return c.Lock(ctx)
}

// Ask asks question on a terminal; --yes answers it (see IOStreams.Confirm).
func (c Change) Ask(question string) error { return c.IO.Confirm(question, c.Yes) }

type dryRunJSON struct {
	DryRun bool     `json:"dry_run"`
	Calls  []string `json:"calls"`
	Notes  []string `json:"notes,omitempty"`
}

func (c Change) printDryRun(calls []string) error { return c.PrintDryRun(calls, nil) }

// PrintDryRun prints a dry run's calls (counted) and then its notes: what
// the calls would find or do that is no call of its own (the objects an
// apply would remove, the reason it would refuse).
func (c Change) PrintDryRun(calls, notes []string) error {
	if calls == nil {
		calls = []string{}
	}
	if c.Output == "json" {
		return output.JSON(c.IO.Out, dryRunJSON{DryRun: true, Calls: calls, Notes: notes})
	}
	fmt.Fprintf(c.IO.ErrOut, "dry run: nothing is changed; siemctl would make %d call(s):\n", len(calls))
	for _, l := range calls {
		if _, err := fmt.Fprintln(c.IO.Out, l); err != nil {
			return err
		}
	}
	for _, l := range notes {
		if _, err := fmt.Fprintln(c.IO.Out, l); err != nil {
			return err
		}
	}
	return nil
}

// Change returns the change policy of cmd; its own flags and args complete
// the command line recorded as the lock's holder (no flag carries a secret).
func (f *Factory) Change(cmd *cobra.Command, args []string, dryRun bool) Change {
	parts := []string{cmd.CommandPath()}
	local := cmd.LocalFlags()
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch {
		case local.Lookup(fl.Name) == nil: // global flags (--config, --yes)
		case fl.Value.Type() == "bool":
			parts = append(parts, "--"+fl.Name)
		default:
			parts = append(parts, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	command := strings.Join(append(parts, args...), " ")
	return Change{IO: f.IO, Output: f.Global.Output, Yes: f.Global.Yes, DryRun: dryRun,
		Lock: func(ctx context.Context) (func(), error) { return f.HostLock(ctx, command) }}
}

// ChangeVerb is the preamble every verb that changes the stack runs first:
// -o must be table or json, or one the command lists in its
// OutputsAnnotation (exit 2 otherwise), then the change policy of cmd
// (confirmation, host lock, --dry-run) as Change builds it. Nothing is
// asked nor locked here: Begin does that, lock before confirmation.
func (f *Factory) ChangeVerb(cmd *cobra.Command, args []string, dryRun bool) (Change, error) {
	outputs := []string{"table", "json"}
	if extra := cmd.Annotations[OutputsAnnotation]; extra != "" {
		outputs = append(outputs, strings.Split(extra, ",")...)
	}
	if err := CheckOutput(f, outputs...); err != nil {
		return Change{}, err
	}
	return f.Change(cmd, args, dryRun), nil
}

// ChangeCommand makes cmd a verb that changes the stack: it gets --dry-run,
// and its RunE runs ChangeVerb's preamble (-o table|json, the change policy
// of cmd and its arguments) before run, which checks the rest of the
// command line and runs the verb.
func (f *Factory) ChangeCommand(cmd *cobra.Command, run func(cmd *cobra.Command, args []string, change Change) error) *cobra.Command {
	var dryRun bool
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		change, err := f.ChangeVerb(cmd, args, dryRun)
		if err != nil {
			return err
		}
		return run(cmd, args, change)
	}
	AddDryRunFlag(cmd, &dryRun)
	return cmd
}

// Calls is a fixed list of calls, for Begin.
func Calls(lines ...string) func() ([]string, error) {
	return func() ([]string, error) { return lines, nil }
}

// AddDryRunFlag adds --dry-run to a command that changes the stack.
func AddDryRunFlag(cmd *cobra.Command, dryRun *bool) {
	cmd.Flags().BoolVar(dryRun, "dry-run", false, "print each call it would make (method + path, unit job, file) and change nothing")
}

// hostLock takes the host lock under the config's state_dir for command.
func (f *Factory) hostLock(ctx context.Context, command string) (func(), error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	l, err := lock.Acquire(ctx, lock.HostPath(cfg.StateDir), lock.Holder{Command: command}, 0)
	if err != nil {
		return nil, err
	}
	if l.Stale != nil {
		f.Logger.Warn("previous holder of the host lock died without releasing it", "holder", l.Stale.String())
	}
	return func() { _ = l.Release() }, nil
}
