package snapshot

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// ShowOptions are the parsed inputs and dependencies of `snapshot show`.
type ShowOptions struct {
	IO     *output.IOStreams
	Store  func() (*snapshot.Store, error)
	Output string
	Ref    string
}

// NewCmdShow builds `snapshot show`; runF replaces the behaviour in tests.
func NewCmdShow(f *cli.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Store: storeFunc(f)}
	cmd := &cobra.Command{
		ValidArgsFunction: completeRefs(f, 1),
		Use:               "show REF",
		Short:             "Show one snapshot (a summary, or the whole document with -o json)",
		Long: `Show a snapshot: REF is its id, a unique id prefix, "latest", "previous" or
"label:NAME". The table is a summary; -o json prints the whole stored document.`,
		Example: `  siemctl snapshot show latest
  siemctl snapshot show label:pre-upgrade -o json | jq .indexer.indices`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Output, opts.Ref = f.Global.Output, args[0]
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			return cli.Run(cmd.Context(), runF, runShow, opts)
		},
	}
	return cmd
}

func runShow(_ context.Context, opts *ShowOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	d, err := store.Get(opts.Ref)
	if err != nil {
		return refError(err)
	}
	if opts.Output == "json" {
		return snapshot.RenderDocumentJSON(opts.IO.Out, d)
	}
	return snapshot.RenderDocumentText(opts.IO.Out, d, opts.IO.IsStdoutTTY())
}
