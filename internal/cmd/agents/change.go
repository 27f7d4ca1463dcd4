package agents

import (
	"context"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/output"
)

// ChangeOptions are the inputs the verbs that change agents (restart,
// remove) share: the ids, the change (confirmation, host lock, --dry-run)
// and the bound of the call to the manager.
type ChangeOptions struct {
	IO     *output.IOStreams
	Fleet  Fleet
	Output string
	IDs    []string
	Change cli.Change
	// Timeout bounds the call to the manager (--timeout).
	Timeout time.Duration
}

func newChangeOptions(f *cli.Factory) ChangeOptions {
	return ChangeOptions{IO: f.IO, Fleet: fleetFrom(f)}
}

// fill copies the global flags, the arguments and the change at run time.
func (o *ChangeOptions) fill(f *cli.Factory, args []string, change cli.Change) {
	o.Output, o.IDs, o.Timeout, o.Change = f.Global.Output, args, f.Global.Timeout, change
}

// begin asks question (or prints calls under --dry-run), takes the host
// lock and returns the manager API under --timeout, and done, which
// releases both. A nil api means nothing is to be done (dry run, declined,
// locked, no client): return err.
func (o *ChangeOptions) begin(ctx context.Context, question string, calls func() ([]string, error)) (context.Context, fleet.API, func(), error) {
	release, proceed, err := o.Change.Begin(ctx, question, calls)
	if !proceed {
		return ctx, nil, nil, usage(err)
	}
	ctx, api, cancel, err := cli.Connect(ctx, o.Timeout, o.Fleet.API)
	if err != nil {
		release()
		return ctx, nil, nil, err
	}
	return ctx, api, func() { cancel(); release() }, nil
}
