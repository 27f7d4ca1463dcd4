package steps

import (
	"context"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

// --- gate.no_trace -----------------------------------------------------------------------------

func runNoTrace(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	var left []string
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	s, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "indexer", "indexer", err)
	}
	left = append(left, cluster.Leftovers(s, cluster.LeftoverOptions{}).Items...)
	bad, err := inactiveUnits(ctx, d, d.Config.HostComponents())
	if err != nil {
		return engine.Outcome{}, err
	}
	for _, b := range bad {
		left = append(left, "unit "+b)
	}
	if len(bad) == 0 && d.Config.Runs("shipper") {
		if sh, err := d.shipper(); err == nil {
			rep, err := sh.TestOutput(ctx)
			switch {
			case err != nil:
				left = append(left, "shipper test output: "+err.Error())
			case !rep.OK:
				left = append(left, "shipper cannot talk to the indexer")
			}
		}
	}
	if len(left) > 0 {
		return engine.Outcome{}, engine.Pending("left behind: %s", strings.Join(left, "; "))
	}
	msg := "allocation all, no transient watermark override, every unit active"
	if d.Config.Runs("shipper") {
		msg += ", shipper talks to the indexer"
	}
	return engine.Outcome{Message: msg}, nil
}
