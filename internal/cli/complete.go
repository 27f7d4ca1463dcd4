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
