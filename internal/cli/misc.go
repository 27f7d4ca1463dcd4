package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func newCmdCompletion() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Example: `  siemctl completion bash > /etc/bash_completion.d/siemctl
  siemctl completion zsh > "${fpath[1]}/_siemctl"
  siemctl completion fish > ~/.config/fish/completions/siemctl.fish`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish"},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return cmd.Root().GenBashCompletionV2(out, true)
			case "zsh":
				return cmd.Root().GenZshCompletion(out)
			case "fish":
				return cmd.Root().GenFishCompletion(out, true)
			}
			return FlagErrorf("unknown shell %q: use bash, zsh or fish", args[0])
		},
	}
}

func newCmdDocs(root *cobra.Command) *cobra.Command {
	docs := &cobra.Command{Use: "docs", Short: "Generate documentation", Hidden: false}
	docs.AddCommand(&cobra.Command{
		Use:     "man DIR",
		Short:   "Write man pages for every command into DIR",
		Example: "  siemctl docs man /usr/local/share/man/man1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			hdr := &doc.GenManHeader{Title: "SIEMCTL", Section: "1", Source: "siemctl"}
			root.DisableAutoGenTag = true
			if err := doc.GenManTree(root, hdr, args[0]); err != nil {
				return fmt.Errorf("write man pages: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "man pages written to %s\n", args[0])
			return nil
		},
	})
	return docs
}
