package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/verdict"
)

// Level and Verdict are the one verdict shape of every ops area
// (internal/ops/verdict); the indexer's verdicts below are of it.
type (
	Level   = verdict.Level
	Verdict = verdict.Verdict
)

// The levels, from fine to broken (see internal/ops/verdict).
const (
	OK      = verdict.OK
	Warn    = verdict.Warn
	Wait    = verdict.Wait
	NoGo    = verdict.NoGo
	Unknown = verdict.Unknown
)

// Status judges a cluster health status. Yellow is fine on a single data
// node (a replica cannot sit on the node holding its primary); on more
// nodes unassigned replicas are worth a look. Red means a primary is
// unassigned: Red says whether it will recover.
func Status(h indexer.Health) Verdict {
	switch h.Status {
	case "green":
		return Verdict{Level: OK}
	case "yellow":
		if h.NumberOfDataNodes <= 1 {
			return Verdict{Level: OK, Summary: "single node: unassigned replicas are expected"}
		}
		return Verdict{Level: Warn, Summary: "replicas unassigned on a multi-node cluster", Fix: "siemctl indexer shards --unassigned"}
	case "red":
		return Verdict{Level: NoGo, Summary: "at least one primary shard is unassigned, data is unavailable",
			Fix: "siemctl indexer shards --unassigned (explains why); abort any upgrade and roll back"}
	}
	return Verdict{Level: Unknown, Summary: "unexpected cluster status " + fmt.Sprintf("%q", h.Status), Fix: "curl the indexer's _cluster/health"}
}

// ShardsAPI is what Red reads.
type ShardsAPI interface {
	CatShards(ctx context.Context) ([]indexer.Shard, error)
	AllocationExplain(ctx context.Context, er indexer.ExplainRequest) (indexer.Explanation, error)
}

// Red judges a red cluster: Wait while shards recover (initializing,
// delayed, or the first unassigned primary can still be allocated); NoGo
// when that primary cannot be allocated, with the allocation explanation
// (the deciders that say no) and what it says to do.
func Red(ctx context.Context, api ShardsAPI, h indexer.Health) Verdict {
	if h.InitializingShards > 0 || h.DelayedUnassignedShards > 0 {
		return Verdict{Level: Wait, Summary: fmt.Sprintf("cluster red: %d shards initializing, %d delayed", h.InitializingShards, h.DelayedUnassignedShards)}
	}
	shards, err := api.CatShards(ctx)
	if err != nil {
		return Verdict{Level: Wait, Summary: fmt.Sprintf("cluster red (shards not readable: %v)", err)}
	}
	for _, s := range shards {
		if s.PriRep != "p" || s.State != "UNASSIGNED" {
			continue
		}
		ex, err := api.AllocationExplain(ctx, indexer.ExplainRequest{Index: s.Index, Shard: s.Shard, Primary: true})
		if err != nil {
			return Verdict{Level: Wait, Summary: fmt.Sprintf("cluster red: primary %s[%d] unassigned (%v)", s.Index, s.Shard, err)}
		}
		switch ex.CanAllocate {
		case "yes", "throttled", "awaiting_info", "":
			can := ex.CanAllocate
			if can == "" {
				can = "-"
			}
			return Verdict{Level: Wait, Summary: fmt.Sprintf("cluster red: primary %s[%d] unassigned, allocation %s", s.Index, s.Shard, can)}
		}
		why := []string{}
		if ex.AllocateExplanation != "" {
			why = append(why, ex.AllocateExplanation)
		}
		for _, dec := range ex.Blocking() {
			why = append(why, dec.Decider+": "+dec.Explanation)
		}
		var fix []string
		for _, r := range Merge(Remedies(ex)) {
			fix = append(fix, r.String())
		}
		return Verdict{Level: NoGo, Summary: fmt.Sprintf("cluster red: primary shard %s[%d] cannot be allocated (%s): %s", s.Index, s.Shard, ex.CanAllocate, strings.Join(why, "; ")),
			Items: why, Fix: strings.Join(fix, "; ")}
	}
	return Verdict{Level: Wait, Summary: fmt.Sprintf("cluster red, %d unassigned shards", h.UnassignedShards)}
}

// AllocationBack judges cluster.routing.allocation.enable: anything but
// all (primaries, new_primaries or none, what an upgrade sets while a node
// restarts) leaves replicas and new shards unassigned. OpenSearch reads the
// value in any case ("ALL" is all) and an unset one is all. Wait when it is
// not all (the end of an upgrade sets it back), with the fix.
func AllocationBack(s indexer.Settings) Verdict { return AllocationSettingBack(s.AllocationEnable()) }

// AllocationSettingBack is AllocationBack's verdict on one value of
// cluster.routing.allocation.enable already resolved (a snapshot's
// effective value, "" when unset; `indexer allocation`'s read-back).
func AllocationSettingBack(en indexer.Setting) Verdict {
	if en.Value == "" || strings.EqualFold(en.Value, "all") {
		return Verdict{Level: OK, Summary: "allocation enabled for all shards"}
	}
	return Verdict{Level: Wait, Summary: fmt.Sprintf("allocation.enable is %s (%s): replicas and new shards are not allocated", en.Value, en.Source),
		Items: []string{fmt.Sprintf("%s=%s (%s)", indexer.KeyAllocationEnable, en.Value, en.Source)}, Fix: "siemctl indexer allocation all"}
}

// LeftoverOptions tune Leftovers.
type LeftoverOptions struct {
	// Persistent counts persistent watermark overrides too. An upgrade
	// only ever sets transient ones; a persistent one may be on purpose.
	Persistent bool
}

// Leftovers judges what maintenance leaves behind in the cluster settings:
// allocation not back at all, disk watermark overrides. Wait when any is
// set (the end of an upgrade resets them).
func Leftovers(s indexer.Settings, opts LeftoverOptions) Verdict {
	var problems, items, fixes []string
	if v := AllocationBack(s); v.Level != OK {
		problems = append(problems, v.Summary+"; left over from an upgrade?")
		items = append(items, v.Items...)
		fixes = append(fixes, v.Fix)
	}
	for _, ov := range s.Overrides(WatermarkPrefix) {
		if ov.Source == indexer.SourceTransient || opts.Persistent && ov.Source == indexer.SourcePersistent {
			problems = append(problems, fmt.Sprintf("watermark override %s=%s (%s)", ov.Key, ov.Value, ov.Source))
			items = append(items, fmt.Sprintf("%s %s=%s", ov.Source, ov.Key, ov.Value))
			if !slices.Contains(fixes, "siemctl indexer watermark --clear") {
				fixes = append(fixes, "siemctl indexer watermark --clear")
			}
		}
	}
	if len(problems) == 0 {
		return Verdict{Level: OK, Summary: "allocation enabled for all shards, no temporary overrides"}
	}
	return Verdict{Level: Wait, Summary: strings.Join(problems, "; "), Items: items, Fix: strings.Join(fixes, "; ")}
}

// Archived judges archived.* cluster settings (settings the node no longer
// knows, kept from an older version): NoGo for an upgrade, which may refuse
// to start with them.
func Archived(s indexer.Settings) Verdict {
	keys := s.ArchivedKeys()
	if len(keys) == 0 {
		return Verdict{Level: OK, Summary: "no archived.* settings"}
	}
	return Verdict{Level: NoGo, Summary: fmt.Sprintf("%d archived (unknown) settings: %s", len(keys), strings.Join(keys, ", ")), Items: keys,
		Fix: `remove them: PUT _cluster/settings {"persistent":{"archived.*":null},"transient":{"archived.*":null}}`}
}

// Shadowing judges whether template name governs index: NoGo when another
// template overrides it (the index would get that template's mappings);
// OK otherwise, saying so when it does not apply yet.
func Shadowing(sim indexer.Simulation, name, index string) Verdict {
	if by := sim.ShadowedBy(name); len(by) > 0 {
		return Verdict{Level: NoGo, Summary: fmt.Sprintf("template %q is shadowed for %s by %s", name, index, strings.Join(by, ", ")), Items: by,
			Fix: "delete or narrow the shadowing template(s) (" + strings.Join(by, ", ") + "), then roll over to a new index"}
	}
	if !slices.Contains(sim.Applied, name) {
		applied := "none"
		if len(sim.Applied) > 0 {
			applied = strings.Join(sim.Applied, ", ")
		}
		return Verdict{Level: OK, Summary: fmt.Sprintf("template %s does not apply to %s yet (applied: %s)", name, index, applied)}
	}
	return Verdict{Level: OK, Summary: fmt.Sprintf("template %s wins for %s", name, index)}
}

// DiskUse is the disk facts of the indexer's data.
type DiskUse struct {
	UsedPercent float64
	// Blocked lists indices with a read-only block ("name (blocks)").
	Blocked []string
}

// DiskLimits are the thresholds (percent); zero leaves one out.
type DiskLimits struct {
	Warn    int // used above: worth a look
	NoGo    int // used above: no change now, free space first
	MinFree int // free below: no upgrade (it needs room for new files)
}

// Disk judges disk use: read-only blocked indices (flood stage) and use
// above the no-go limit are NoGo, too little free space for an upgrade is
// NoGo, use above the warning level is Warn.
func Disk(u DiskUse, l DiskLimits) Verdict {
	cleanup := "siemctl alerts cleanup --disk-above " + fmt.Sprint(l.Warn)
	switch {
	case len(u.Blocked) > 0:
		return Verdict{Level: NoGo, Summary: fmt.Sprintf("%d index(es) blocked read-only (flood stage?): writes and alerts are refused", len(u.Blocked)), Items: u.Blocked,
			Fix: `free disk space, then clear the block: PUT */_settings {"index.blocks.read_only_allow_delete": null}`}
	case l.NoGo > 0 && u.UsedPercent > float64(l.NoGo):
		return Verdict{Level: NoGo, Summary: fmt.Sprintf("disk %.0f%% used (> %d%%)", u.UsedPercent, l.NoGo), Fix: "free disk: " + cleanup}
	case l.MinFree > 0 && 100-u.UsedPercent < float64(l.MinFree):
		return Verdict{Level: NoGo, Summary: fmt.Sprintf("%.0f%% free: an upgrade needs at least %d%% free", 100-u.UsedPercent, l.MinFree), Fix: "free disk: " + cleanup}
	case l.Warn > 0 && u.UsedPercent > float64(l.Warn):
		return Verdict{Level: Warn, Summary: fmt.Sprintf("disk %.0f%% used (> %d%%)", u.UsedPercent, l.Warn), Fix: cleanup}
	}
	return Verdict{Level: OK, Summary: fmt.Sprintf("disk %.0f%% used, no read-only blocks", u.UsedPercent)}
}
