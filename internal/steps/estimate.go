package steps

import (
	"fmt"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
)

// A kind's share of an upgrade's time budget (internal/upgrade) is its own
// estimate (engine.Estimator: Spec.Estimate below each kind) from the facts
// the budget gathers; a kind without one, or whose estimate declines, costs
// its history (the median of its earlier durations on this host), else a
// default.

// Estimate sources: the budget names each estimate's source, and sums them
// up by these heads.
const (
	SourceHistory = "history"
	SourceDefault = "default"
	SourceSpec    = "start wait"
	SourceVolume  = "volume"
)

// Assumed costs when no earlier run measured one.
const (
	// assumedHook is a site hook's duration before it ever ran here.
	assumedHook = 5 * time.Minute
	// assumedIncremental is the share of the data a repeated snapshot copies.
	assumedIncremental = 0.10
	// assumedPerPrimary is what each primary shard adds to the wait for a yellow cluster after
	// the indexer's start: indexer/security took 292 s with 1,001 primaries against 85 s with
	// 51 (README, benchmarks under load, 4 recoveries at a time; the run now raises that to 32).
	assumedPerPrimary = 200 * time.Millisecond
)

// DataVolume is what the indexer data costs to secure.
type DataVolume struct {
	Mode  string `json:"mode"`
	Bytes int64  `json:"bytes"`
	// FirstSnapshot: the repository holds no snapshot yet (snapshot mode copies everything).
	FirstSnapshot bool `json:"first_snapshot,omitempty"`
	// Known is false when the data size could not be measured.
	Known bool `json:"known"`
	// Primaries is the primary shards the steps that wait for them are given time for (the
	// count of their deadlines, Primaries), PrimariesFrom where it comes from; 0: unknown.
	Primaries     int    `json:"primaries,omitempty"`
	PrimariesFrom string `json:"primaries_from,omitempty"`
}

// Rate is a data rate in bytes per second, with where it comes from
// ("measured", "assumed").
type Rate struct {
	PerSecond float64
	Source    string
}

// EstimateFacts are what a kind's estimate may use (the facts of
// engine.Estimator).
type EstimateFacts struct {
	// History is the median of this step's (or undo's) earlier durations
	// on this host, HistorySource says so ("history (median of 3)"); ""
	// when it never ran.
	History       time.Duration
	HistorySource string
	Volume        DataVolume
	Copy          Rate // a cold copy with checksums
	Snapshot      Rate // a snapshot into the repository
	// Watch is the --watch window the run holds after validation (0: none).
	Watch time.Duration
}

// BudgetRole is what a kind is to the time budget besides its estimate:
// the kinds that secure or restore the indexer data declare it (their
// Spec's Traits), the budget reads it by kind name (RoleOf) from journals,
// gate results and plans alike.
type BudgetRole struct {
	// Phase is the budget phase the kind's steps count in, whatever their
	// step id ("": the id's own phase).
	Phase string
	// MovesData: the cost is the data volume and the data-safety mode, so
	// a skipped step says nothing about what it costs on this host.
	MovesData bool
	// Measures is the data rate a successful run measures (RateCopy,
	// RateSnapshot; "": none): the bytes it moved are its outcome's
	// Data[MeasuredBytes], over its duration.
	Measures      string
	MeasuredBytes string
	// ReportsVolume: the outcome's Data["cost"] is the data volume to
	// secure (a DataSafetyCost).
	ReportsVolume bool
}

// The data rates a run measures (BudgetRole.Measures).
const (
	RateCopy     = "copy"     // a cold copy with checksums
	RateSnapshot = "snapshot" // a snapshot into the repository
)

// The roles of the kinds that secure and restore the indexer data.
var (
	roleBackupData    = BudgetRole{Phase: "backups", MovesData: true, Measures: RateCopy, MeasuredBytes: "bytes"}
	roleSnapshotTake  = BudgetRole{Phase: "backups", MovesData: true, Measures: RateSnapshot, MeasuredBytes: "incremental_bytes"}
	roleSnapshotStart = BudgetRole{Phase: "backups"}
	roleRestoreData   = BudgetRole{MovesData: true}
	roleDataSafety    = BudgetRole{ReportsVolume: true}
)

// roles is every kind's declared budget role, by kind name.
var roles = sync.OnceValue(func() map[string]BudgetRole {
	m := map[string]BudgetRole{}
	for _, k := range Kinds() {
		if t, ok := k.(engine.Traited); ok {
			if r, ok := t.Traits().(BudgetRole); ok {
				m[k.Name()] = r
			}
		}
	}
	return m
})

// RoleOf is the budget role kind declares (the zero role for a kind that
// declares none, or no kind of that name).
func RoleOf(kind string) BudgetRole { return roles()[kind] }

func factsOf(f any) EstimateFacts {
	ef, _ := f.(EstimateFacts)
	return ef
}

// fixed is the estimate of a kind that costs about d on a healthy single
// host (its timeout is the worst case, not the estimate), unless it has a
// history.
func fixed[P any](d time.Duration) func(P, any) (time.Duration, string, bool) {
	return func(_ P, f any) (time.Duration, string, bool) {
		if factsOf(f).HistorySource != "" {
			return 0, "", false
		}
		return d, SourceDefault, true
	}
}

func volumeEstimate(bytes float64, r Rate, what string) (time.Duration, string, bool) {
	d := time.Duration(bytes / r.PerSecond * float64(time.Second))
	return d, fmt.Sprintf("%s: %s %s at %s/s %s", SourceVolume, output.Bytes(int64(bytes)), what, output.Bytes(int64(r.PerSecond)), r.Source), true
}

// estimateBackupData: a cold copy costs the volume, the take hook its
// history (else assumed), a snapshot-mode backup only records it.
func estimateBackupData(_ *noParams, facts any) (time.Duration, string, bool) {
	f := factsOf(facts)
	switch f.Volume.Mode {
	case config.DataSafetyCopy:
		if f.Volume.Known {
			return volumeEstimate(float64(f.Volume.Bytes), f.Copy, "cold copy")
		}
	case config.DataSafetyCommand:
		if f.HistorySource != "" {
			return f.History, f.HistorySource + ": the take hook", true
		}
		return assumedHook, SourceDefault + ": the take hook's cost is the site's", true
	case config.DataSafetySnapshot:
		return time.Second, SourceDefault + ": records the snapshot", true
	}
	return 0, "", false
}

// estimateSnapshotTake: only in snapshot mode; a first snapshot copies
// everything, a later one its increment.
func estimateSnapshotTake(_ *noParams, facts any) (time.Duration, string, bool) {
	f := factsOf(facts)
	v := f.Volume
	switch {
	case v.Mode != config.DataSafetySnapshot:
		return 0, "skipped: data safety " + v.Mode, true
	case v.Known && v.FirstSnapshot:
		return volumeEstimate(float64(v.Bytes), f.Snapshot, "first snapshot")
	case f.HistorySource != "":
		return f.History, f.HistorySource + ": incremental", true
	case v.Known:
		return volumeEstimate(float64(v.Bytes)*assumedIncremental, f.Snapshot, "incremental (10% assumed)")
	}
	return 0, "", false
}

// estimateSnapshotStart is indexer.snapshot_start's: only in snapshot mode;
// it starts the snapshot indexer.snapshot_take then waits for, and returns
// at once.
func estimateSnapshotStart(_ *noParams, facts any) (time.Duration, string, bool) {
	f := factsOf(facts)
	switch {
	case f.Volume.Mode != config.DataSafetySnapshot:
		return 0, "skipped: data safety " + f.Volume.Mode, true
	case f.HistorySource != "":
		return f.History, f.HistorySource, true
	}
	return time.Second, SourceDefault + ": starts the snapshot indexer/snapshot waits for", true
}

// estimateRestoreData: the copy back costs the volume; else history, the
// restore hook, or setting the data aside.
func estimateRestoreData(_ *noParams, facts any) (time.Duration, string, bool) {
	f := factsOf(facts)
	switch v := f.Volume; {
	case v.Mode == config.DataSafetyCopy && v.Known:
		return volumeEstimate(float64(v.Bytes), f.Copy, "copied back")
	case f.HistorySource != "":
		return f.History, f.HistorySource, true
	case v.Mode == config.DataSafetyCommand:
		return assumedHook, SourceDefault + ": the restore hook's cost is the site's", true
	case v.Mode == config.DataSafetySnapshot:
		return time.Second, SourceDefault + ": data set aside", true
	}
	return 0, "", false
}

// estimateRestoreSnapshot: only in snapshot mode, the volume restored.
func estimateRestoreSnapshot(_ *restoreSnapshotParams, facts any) (time.Duration, string, bool) {
	f := factsOf(facts)
	if f.Volume.Mode != config.DataSafetySnapshot {
		return 0, "skipped: data safety " + f.Volume.Mode, true
	}
	if f.Volume.Known {
		return volumeEstimate(float64(f.Volume.Bytes), f.Snapshot, "restored")
	}
	return 0, "", false
}

// estimateSecurityApply: the security init tool waits for a yellow cluster,
// every primary back from disk (the health gate after it finds yellow); its
// deadline grows with the count (timeout_per_primary), so does this.
func estimateSecurityApply(p *securityParams, facts any) (time.Duration, string, bool) {
	f := factsOf(facts)
	const base = 30 * time.Second
	if p.TimeoutPerPrimary <= 0 || f.Volume.Primaries <= 0 {
		if f.HistorySource != "" {
			return 0, "", false
		}
		return base, SourceDefault, true
	}
	extra := time.Duration(f.Volume.Primaries) * assumedPerPrimary
	why := fmt.Sprintf("%s × %d primary shards, %s", assumedPerPrimary, f.Volume.Primaries, f.Volume.PrimariesFrom)
	switch {
	case f.HistorySource != "" && f.History >= extra:
		return f.History, f.HistorySource + "; at least " + why, true
	case f.HistorySource != "":
		return extra, f.HistorySource + " raised to " + why, true
	}
	return base + extra, SourceDefault + ": + " + why, true
}

// estimateStart: the start wait limits are the floor (indexer 60 s,
// manager 30 s, dashboard 60 s) of a start without history.
func estimateStart(p *startParams, facts any) (time.Duration, string, bool) {
	switch {
	case factsOf(facts).HistorySource != "":
		return 0, "", false
	case p.Wait > 0:
		return p.Wait.D(), SourceSpec, true
	}
	return 10 * time.Second, SourceDefault, true
}

// estimateWatch: its length is the operator's --watch, not a history.
func estimateWatch(_ *watchParams, facts any) (time.Duration, string, bool) {
	if w := factsOf(facts).Watch; w > 0 {
		return w, SourceDefault + ": the --watch window", true
	}
	return 0, "skipped: only with --watch", true
}
