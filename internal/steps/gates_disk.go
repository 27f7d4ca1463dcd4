package steps

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/output"
)

// --- gate.disk ----------------------------------------------------------------

type diskParams struct {
	MinFreePercent *int `yaml:"min_free_percent"`
	NogoPercent    *int `yaml:"nogo_percent"`
}

func (p *diskParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	return []string{fmt.Sprintf("statfs %s: at least %s%% free, no-go above %s%% used", pl.dataDir(), thresholdPct(pl, p.MinFreePercent, "upgrade_min_free_percent"), thresholdPct(pl, p.NogoPercent, "disk_nogo_percent"))}
}

func thresholdPct(pl *Planning, v *int, key string) string {
	if v != nil {
		return strconv.Itoa(*v)
	}
	if c := pl.cfg(); c != nil {
		switch key {
		case "upgrade_min_free_percent":
			return strconv.Itoa(c.Thresholds.UpgradeMinFreePercent)
		case "disk_nogo_percent":
			return strconv.Itoa(c.Thresholds.DiskNogoPercent)
		}
	}
	return "<thresholds." + key + ">"
}

func (p *diskParams) Validate() error {
	for name, v := range map[string]*int{"min_free_percent": p.MinFreePercent, "nogo_percent": p.NogoPercent} {
		if v != nil && (*v < 0 || *v > 100) {
			return fmt.Errorf("%s %d is not a percentage", name, *v)
		}
	}
	return nil
}

func runDisk(_ context.Context, env Env, p *diskParams) (engine.Outcome, error) {
	d := env.Deps()
	if d.Disk == nil || d.Config == nil {
		return engine.Outcome{}, errors.New("disk usage is not available")
	}
	minFree, nogo := d.Config.Thresholds.UpgradeMinFreePercent, d.Config.Thresholds.DiskNogoPercent
	if p.MinFreePercent != nil {
		minFree = *p.MinFreePercent
	}
	if p.NogoPercent != nil {
		nogo = *p.NogoPercent
	}
	path := d.Config.Indexer.DataDir
	u, err := d.Disk(path)
	if err != nil {
		return engine.Outcome{}, err
	}
	free := 100 - u.UsedPercent
	msg := fmt.Sprintf("%s: %.1f%% used, %.1f%% free (%s of %s)", path, u.UsedPercent, free, output.Bytes(int64(u.FreeBytes)), output.Bytes(int64(u.TotalBytes)))
	v := cluster.Disk(cluster.DiskUse{UsedPercent: u.UsedPercent}, cluster.DiskLimits{Warn: d.Config.Thresholds.DiskWarnPercent, NoGo: nogo, MinFree: minFree})
	if v.Level == cluster.NoGo {
		return engine.Outcome{}, engine.NoGo("%s: %s; %s", msg, v.Summary, v.Fix)
	}
	return engine.Outcome{Message: msg}, nil
}
