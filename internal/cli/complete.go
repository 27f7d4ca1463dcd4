package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/config"
)

// OutputsAnnotation lists the -o values a command takes beyond table and json (comma-separated);
// shell completion offers them.
const OutputsAnnotation = "siemctl/outputs"

// registerGlobalCompletions gives the global flags their values in shell completion.
func registerGlobalCompletions(root *cobra.Command) {
	fixed := func(values ...string) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return values, cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = root.RegisterFlagCompletionFunc("profile", fixed(config.ProfileNames()...))
	_ = root.RegisterFlagCompletionFunc("log-level", fixed("debug", "info", "warn", "error"))
	_ = root.RegisterFlagCompletionFunc("log-format", fixed("text", "json"))
	_ = root.RegisterFlagCompletionFunc("output", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		out := []string{"table", "json"}
		if extra := cmd.Annotations[OutputsAnnotation]; extra != "" {
			out = append(out, strings.Split(extra, ",")...)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("timeout", fixed("5s", "10s", "30s", "1m"))
}

// CompleteFromConfig runs list with the loaded configuration and offers what it returns that starts
// with the word being completed; nothing (never an error on the terminal) when the configuration
// cannot be loaded.
func CompleteFromConfig(f *Factory, list func(cfg *config.Config, toComplete string) []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, err := f.Config()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, v := range list(cfg, toComplete) {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

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
