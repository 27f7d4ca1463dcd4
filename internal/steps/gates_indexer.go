package steps

import (
	"context"
	"slices"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

// --- gate.settings_clean ------------------------------------------------------------

func runSettingsClean(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d, ix, err := indexerOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	s, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "indexer", "indexer", err)
	}
	if v := cluster.Archived(s); v.Level != cluster.OK {
		return engine.Outcome{}, engine.NoGo("%s; %s", v.Summary, v.Fix)
	}
	return engine.Outcome{Message: "no archived.* settings"}, nil
}

// --- gate.templates -------------------------------------------------------------------

func runTemplates(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d, ix, err := indexerOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	index := d.Config.Indexer.AlertsIndexPrefix + d.now().UTC().Format("2006.01.02")
	sim, err := ix.SimulateIndex(ctx, index)
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "indexer", "indexer", err)
	}
	name := d.Config.Shipper.TemplateName
	v := cluster.Shadowing(sim, name, index)
	switch {
	case v.Level != cluster.OK:
		return engine.Outcome{}, engine.NoGo("%s; %s", v.Summary, v.Fix)
	case !slices.Contains(sim.Applied, name):
		return engine.Outcome{Message: v.Summary + "; the upgrade loads it"}, nil
	}
	return engine.Outcome{Message: v.Summary}, nil
}
