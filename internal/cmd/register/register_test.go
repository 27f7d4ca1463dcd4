package register_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/cmd/register"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/output"
)

func tree() *cobra.Command {
	io, _, _, _ := output.Test()
	f := factory.New(io, nil)
	root := cli.NewCmdRoot(f)
	register.All(root, f)
	return root
}

// groups returns the command paths (without "siemctl") of every command
// group, and for each the name of one of its subcommands.
func groups(c *cobra.Command, path []string, out map[string]string) {
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		p := append(slices.Clone(path), sub.Name())
		if sub.HasAvailableSubCommands() {
			for _, leaf := range sub.Commands() {
				if leaf.IsAvailableCommand() && len(leaf.Name()) >= 3 {
					out[strings.Join(p, " ")] = leaf.Name()
					break
				}
			}
		}
		groups(sub, p, out)
	}
}

// TestUnknownSubcommand: a misspelt or unknown subcommand of any group
// (siemctl snapshot captrue) is a usage error with cobra's suggestion, not
// the group's help with exit 0; the group alone still prints its help.
func TestUnknownSubcommand(t *testing.T) {
	gs := map[string]string{}
	groups(tree(), nil, gs)
	for _, g := range []string{"agents", "alerts", "indexer", "snapshot", "services", "security", "security api-users", "security indexer", "upgrade", "rules", "docs"} {
		if _, ok := gs[g]; !ok {
			t.Errorf("group %q not found in %v", g, gs)
		}
	}
	for g, sub := range gs {
		b := []byte(sub)
		b[len(b)-1], b[len(b)-2] = b[len(b)-2], b[len(b)-1] // "capture" → "captuer"
		if string(b) == sub {
			b = append(b, 'z') // "add" → "addz"
		}
		for _, typo := range []string{string(b), "nosuchverb"} {
			args := append(strings.Fields(g), typo)
			r := clitest.Main(context.Background(), register.All, false, "", args...)
			if r.Code != cli.ExitUsage || r.Out != "" || !strings.Contains(r.ErrOut, `unknown command "`+typo+`" for "siemctl `+g+`"`) {
				t.Errorf("%v: exit %d\nstdout %q\nstderr %s", args, r.Code, r.Out, r.ErrOut)
			}
			if typo != "nosuchverb" && !strings.Contains(r.ErrOut, "Did you mean this?\n\t"+sub+"\n") {
				t.Errorf("%v: no suggestion of %q: %s", args, sub, r.ErrOut)
			}
		}
		if r := clitest.Main(context.Background(), register.All, false, "", strings.Fields(g)...); r.Code != 0 || !strings.Contains(r.Out, "Available Commands:") {
			t.Errorf("%s alone: exit %d %q", g, r.Code, r.Out)
		}
	}
	if r := clitest.Main(context.Background(), register.All, false, "", "snapshot", "captrue"); r.Code != 2 || !strings.Contains(r.ErrOut, "Did you mean this?\n\tcapture") {
		t.Errorf("snapshot captrue: exit %d %s", r.Code, r.ErrOut)
	}
}

// changing lists every command that changes the stack: docs/commands.md
// says each takes the host lock, asks on a terminal (--yes off one) and has
// --dry-run. A new command with --dry-run must be added here (and follow
// the rule); one listed here without it fails.
var changing = []string{
	"services start", "services stop", "services restart", "services enable",
	"alerts cleanup", "alerts probe",
	"indexer allocation", "indexer flush", "indexer repository", "indexer watermark",
	"security indexer apply", "security api-users add",
	"agents restart", "agents remove", "agents upgrade apply", "agents upgrade resume", "agents upgrade abort",
	"snapshot capture", "snapshot prune",
	"upgrade apply", "upgrade node", "upgrade finish", "upgrade resume", "upgrade abort", "upgrade prune", "rollback",
}

func TestChangingCommandsHaveDryRun(t *testing.T) {
	var withDryRun []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("dry-run") != nil {
			withDryRun = append(withDryRun, strings.TrimPrefix(c.CommandPath(), "siemctl "))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(tree())
	slices.Sort(withDryRun)
	want := slices.Clone(changing)
	slices.Sort(want)
	if !slices.Equal(withDryRun, want) {
		t.Errorf("commands with --dry-run:\n%v\nwant:\n%v", withDryRun, want)
	}
}

// TestCommandReference: docs/commands, the command reference in Markdown, is what the commands'
// own help says now: a flag, a command or a help text changed without `make golden` fails here,
// so the reference cannot go stale.
func TestCommandReference(t *testing.T) {
	pages, err := cli.MarkdownPages(tree())
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 50 || pages["siemctl_upgrade_apply.md"] == nil || pages["README.md"] == nil {
		t.Fatalf("%d pages, want one per command and the index", len(pages))
	}
	golden.AssertTree(t, "../../../docs/commands", pages)
}
