// Package cluster is the indexer's operations floor, the one home of each
// maintenance operation and each judgement of the cluster that commands
// (internal/cmd/indexer), health checks (internal/health) and runbook steps
// (internal/steps) call.
//
// Operations: shard allocation (show with its source; set to primaries/all,
// acknowledged and read back, optionally after waiting for the node to
// answer), shards with the allocation explanation of each unassigned one,
// flush and synced flush (which requests, and whether failed shards are an
// error, are options), the disk-watermark recovery override (transient
// 95%/95%/98%) and its removal.
//
// Verdicts (verdict.go): cluster status (single-node yellow is fine), red
// (recovering or cannot allocate, with the explanation), settings left
// behind by maintenance (allocation not back at all: AllocationBack, which
// `indexer shards` hints and the health check indexer.shards fixes with),
// archived settings, shadowed templates, disk. A Verdict
// is a Level, a summary, facts and a fix; a health check maps it to
// OK/WARN/CRIT/UNKNOWN, a gate to go/pending/no-go.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
)

// API is what the operations need from the indexer (*indexer.Client).
type API interface {
	Settings(ctx context.Context, includeDefaults bool) (indexer.Settings, error)
	PutSettings(ctx context.Context, u indexer.SettingsUpdate) (bool, error)
	CatShards(ctx context.Context) ([]indexer.Shard, error)
	AllocationExplain(ctx context.Context, er indexer.ExplainRequest) (indexer.Explanation, error)
	Flush(ctx context.Context) (indexer.ShardsSummary, error)
	SyncedFlush(ctx context.Context) (indexer.ShardsSummary, bool, error)
}

// ErrNotApplied: the node acknowledged a change but reading the settings
// back shows another effective value.
var ErrNotApplied = errors.New("setting not in effect after the change")

// ErrInvalidValue: an allocation value other than primaries or all.
var ErrInvalidValue = errors.New("invalid value")

// AllocationState is cluster.routing.allocation.enable in force and where
// it is set.
type AllocationState struct {
	Key        string `json:"key"`
	Value      string `json:"value"`
	Source     string `json:"source"`     // transient | persistent | default
	Persistent string `json:"persistent"` // "" when unset
	Transient  string `json:"transient"`  // "" when unset
}

func allocationOf(s indexer.Settings) AllocationState {
	eff := s.AllocationEnable()
	return AllocationState{Key: indexer.KeyAllocationEnable, Value: eff.Value, Source: string(eff.Source),
		Persistent: s.Persistent[indexer.KeyAllocationEnable], Transient: s.Transient[indexer.KeyAllocationEnable]}
}

// Allocation reads the allocation setting.
func Allocation(ctx context.Context, api API) (AllocationState, error) {
	s, err := api.Settings(ctx, false)
	if err != nil {
		return AllocationState{}, fmt.Errorf("read cluster settings: %w", err)
	}
	return allocationOf(s), nil
}

// Change is a setting change with the state before and after.
type Change[T any] struct {
	Before       T    `json:"before"`
	After        T    `json:"after"`
	Acknowledged bool `json:"acknowledged"`
	Changed      bool `json:"changed"`
}

// Await polls ready until it reports true, fails or ctx ends, saying what
// it waits for (the runbook step's poll loop).
type Await func(ctx context.Context, what string, ready func() (bool, error)) error

// SetOptions tune SetAllocation.
type SetOptions struct {
	// Await, when set, waits for the node to answer before the change: right
	// after a (re)start it may not yet (a transport failure counts as "not
	// yet"). Nil: one attempt, a node that does not answer is an error.
	Await Await
}

// NotAnswering reports a transport-level failure (unreachable, not ready,
// timed out): the node may be starting.
func NotAnswering(err error) bool {
	return errors.Is(err, netclient.ErrUnreachable) || errors.Is(err, netclient.ErrNotReady) || errors.Is(err, netclient.ErrTimeout)
}

// SetAllocation sets allocation persistently to value (primaries or all),
// removing a transient value that would override it, verifies the node
// acknowledged the change and reads it back.
func SetAllocation(ctx context.Context, api API, value string, opts SetOptions) (Change[AllocationState], error) {
	if value != "primaries" && value != "all" {
		return Change[AllocationState]{}, fmt.Errorf("%w: allocation %q: use primaries or all", ErrInvalidValue, value)
	}
	var ch Change[AllocationState]
	var before AllocationState
	var err error
	if opts.Await != nil {
		err = opts.Await(ctx, "the indexer to answer", func() (bool, error) {
			before, err = Allocation(ctx, api)
			if err != nil && NotAnswering(err) {
				return false, nil
			}
			return err == nil, err
		})
	} else {
		before, err = Allocation(ctx, api)
	}
	if err != nil {
		return ch, err
	}
	ch.Before = before
	ack, err := api.PutSettings(ctx, allocationUpdate(before, value))
	ch.Acknowledged = ack
	if err != nil {
		return ch, fmt.Errorf("set %s=%s: %w", indexer.KeyAllocationEnable, value, err)
	}
	after, err := Allocation(ctx, api)
	if err != nil {
		return ch, fmt.Errorf("read back %s: %w", indexer.KeyAllocationEnable, err)
	}
	ch.After = after
	ch.Changed = before.Value != after.Value || before.Source != after.Source
	if after.Value != value {
		return ch, fmt.Errorf("%w: %s is %s (%s), want %s", ErrNotApplied, indexer.KeyAllocationEnable, after.Value, after.Source, value)
	}
	return ch, nil
}

// allocationUpdate sets value persistently and removes a transient value
// that would override it.
func allocationUpdate(before AllocationState, value string) indexer.SettingsUpdate {
	u := indexer.SettingsUpdate{Persistent: map[string]any{indexer.KeyAllocationEnable: value}}
	if before.Transient != "" {
		u.Transient = map[string]any{indexer.KeyAllocationEnable: nil}
	}
	return u
}

// PlanSetAllocation returns the change SetAllocation would send, reading
// the settings as it does and changing nothing (dry run).
func PlanSetAllocation(ctx context.Context, api API, value string) ([]string, error) {
	if value != "primaries" && value != "all" {
		return nil, fmt.Errorf("%w: allocation %q: use primaries or all", ErrInvalidValue, value)
	}
	before, err := Allocation(ctx, api)
	if err != nil {
		return nil, err
	}
	return []string{allocationUpdate(before, value).Call()}, nil
}

// ShardRow is a shard, with the allocation explanation when unassigned.
type ShardRow struct {
	indexer.Shard
	Explanation *indexer.Explanation `json:"explanation,omitempty"`
	ExplainErr  string               `json:"explain_error,omitempty"`
}

// ShardsReport lists shards and says why unassigned ones are.
type ShardsReport struct {
	Shards      []ShardRow      `json:"shards"`
	States      map[string]int  `json:"states"`
	Unassigned  int             `json:"unassigned"`
	Unexplained int             `json:"unexplained"` // beyond the explain limit
	Allocation  AllocationState `json:"allocation"`
	Hints       []string        `json:"hints"`
}

// DefaultExplainLimit bounds the allocation-explain calls of one report.
const DefaultExplainLimit = 50

// Shards lists shards (only unassigned ones when unassignedOnly) and
// explains up to explainLimit unassigned shards.
func Shards(ctx context.Context, api API, unassignedOnly bool, explainLimit int) (ShardsReport, error) {
	rep := ShardsReport{Shards: []ShardRow{}, States: map[string]int{}, Hints: []string{}}
	shards, err := api.CatShards(ctx)
	if err != nil {
		return rep, fmt.Errorf("list shards: %w", err)
	}
	sort.SliceStable(shards, func(i, j int) bool {
		a, b := shards[i], shards[j]
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		return a.PriRep < b.PriRep
	})
	if explainLimit <= 0 {
		explainLimit = DefaultExplainLimit
	}
	explained := 0
	var remedies []Remedy
	for _, s := range shards {
		rep.States[s.State]++
		un := s.State == "UNASSIGNED"
		if un {
			rep.Unassigned++
		}
		if unassignedOnly && !un {
			continue
		}
		row := ShardRow{Shard: s}
		if un {
			if explained < explainLimit {
				explained++
				e, err := api.AllocationExplain(ctx, indexer.ExplainRequest{Index: s.Index, Shard: s.Shard, Primary: s.PriRep == "p"})
				if err != nil {
					row.ExplainErr = err.Error()
				} else {
					row.Explanation = &e
					remedies = append(remedies, Remedies(e)...)
				}
			} else {
				rep.Unexplained++
			}
		}
		rep.Shards = append(rep.Shards, row)
	}
	if rep.Unassigned > 0 {
		if s, err := api.Settings(ctx, false); err == nil {
			rep.Allocation = allocationOf(s)
			if v := AllocationBack(s); v.Level != OK {
				rep.Hints = append(rep.Hints, fmt.Sprintf("allocation is left at %s (%s): set it back with `%s`", rep.Allocation.Value, rep.Allocation.Source, v.Fix))
			}
		}
		for _, r := range Merge(remedies) {
			rep.Hints = append(rep.Hints, r.String())
		}
	}
	return rep, nil
}

// FlushReport is the outcome of flush and synced flush.
type FlushReport struct {
	Flush             indexer.ShardsSummary  `json:"flush"`
	Synced            *indexer.ShardsSummary `json:"synced_flush"`
	SyncedPartial     bool                   `json:"synced_partial"`
	SyncedUnsupported bool                   `json:"synced_unsupported"`
}

// FlushOptions choose what Flush sends and how strictly it judges.
type FlushOptions struct {
	// Plain sends POST _flush.
	Plain bool
	// Synced sends POST _flush/synced (after the plain flush). A node
	// without it gets a plain flush instead, unless one was just done.
	Synced bool
	// Strict makes shards that failed the plain flush an error
	// (ErrShardsFailed); otherwise they are only reported.
	Strict bool
}

// ErrShardsFailed: the flush failed on some shards.
var ErrShardsFailed = errors.New("shards failed")

// Flush runs POST _flush and/or POST _flush/synced as opts say. A synced
// flush that partially fails (409) is tolerated and reported; one the node
// does not know is reported as unsupported and replaced by a plain flush
// when none was done.
func Flush(ctx context.Context, api API, opts FlushOptions) (FlushReport, error) {
	var rep FlushReport
	plain := func() error {
		s, err := api.Flush(ctx)
		if err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		rep.Flush = s
		if opts.Strict && s.Failed > 0 {
			return fmt.Errorf("flush: %d of %d %w: %s", s.Failed, s.Total, ErrShardsFailed, strings.Join(s.Failures, "; "))
		}
		return nil
	}
	if opts.Plain {
		if err := plain(); err != nil {
			return rep, err
		}
	}
	if !opts.Synced {
		return rep, nil
	}
	ss, partial, err := api.SyncedFlush(ctx)
	switch {
	case errors.Is(err, indexer.ErrSyncedFlushUnsupported):
		rep.SyncedUnsupported = true
		if !opts.Plain {
			return rep, plain()
		}
	case err != nil:
		return rep, fmt.Errorf("synced flush: %w", err)
	default:
		rep.Synced, rep.SyncedPartial = &ss, partial
	}
	return rep, nil
}

// The usual recovery override: transient watermarks 95%/95%/98%.
const (
	RecoverLow   = "95%"
	RecoverHigh  = "95%"
	RecoverFlood = "98%"
)

// WatermarkPrefix is the prefix of the disk watermark settings.
const WatermarkPrefix = "cluster.routing.allocation.disk.watermark."

// WatermarkState is the watermarks in force and the overrides set.
type WatermarkState struct {
	Watermarks indexer.Watermarks `json:"watermarks"`
	Overrides  []indexer.Setting  `json:"overrides"`
}

// TransientOverrides returns the transient watermark settings.
func (w WatermarkState) TransientOverrides() []indexer.Setting {
	out := []indexer.Setting{}
	for _, s := range w.Overrides {
		if s.Source == indexer.SourceTransient {
			out = append(out, s)
		}
	}
	return out
}

// Watermarks reads the disk watermarks.
func Watermarks(ctx context.Context, api API) (WatermarkState, error) {
	s, err := api.Settings(ctx, false)
	if err != nil {
		return WatermarkState{}, fmt.Errorf("read cluster settings: %w", err)
	}
	return WatermarkState{Watermarks: s.Watermarks(), Overrides: s.Overrides(WatermarkPrefix)}, nil
}

// RecoverWatermarks sets the temporary transient override (low and
// high 95%, flood stage 98%) and verifies it is in force.
func RecoverWatermarks(ctx context.Context, api API) (Change[WatermarkState], error) {
	want := map[string]string{indexer.KeyWatermarkLow: RecoverLow, indexer.KeyWatermarkHigh: RecoverHigh, indexer.KeyWatermarkFlood: RecoverFlood}
	return changeWatermarks(ctx, api, recoverUpdate(), func(after WatermarkState) error {
		got := map[string]indexer.Setting{indexer.KeyWatermarkLow: after.Watermarks.Low, indexer.KeyWatermarkHigh: after.Watermarks.High, indexer.KeyWatermarkFlood: after.Watermarks.FloodStage}
		var bad []string
		for k, v := range want {
			if got[k].Value != v || got[k].Source != indexer.SourceTransient {
				bad = append(bad, fmt.Sprintf("%s is %s (%s)", k, got[k].Value, got[k].Source))
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return fmt.Errorf("%w: %s", ErrNotApplied, strings.Join(bad, ", "))
		}
		return nil
	})
}

func recoverUpdate() indexer.SettingsUpdate {
	return indexer.SettingsUpdate{Transient: map[string]any{
		indexer.KeyWatermarkLow: RecoverLow, indexer.KeyWatermarkHigh: RecoverHigh, indexer.KeyWatermarkFlood: RecoverFlood}}
}

// clearUpdate resets every transient watermark override of before; ok is
// false when there is none (nothing to send).
func clearUpdate(before WatermarkState) (u indexer.SettingsUpdate, ok bool) {
	tr := before.TransientOverrides()
	if len(tr) == 0 {
		return u, false
	}
	u.Transient = map[string]any{}
	for _, s := range tr {
		u.Transient[s.Key] = nil
	}
	return u, true
}

// PlanRecoverWatermarks returns the change RecoverWatermarks would send.
func PlanRecoverWatermarks() []string { return []string{recoverUpdate().Call()} }

// PlanClearWatermarks returns the change ClearWatermarks would send (none
// when no transient override is set), reading the settings as it does.
func PlanClearWatermarks(ctx context.Context, api API) ([]string, error) {
	before, err := Watermarks(ctx, api)
	if err != nil {
		return nil, err
	}
	if u, ok := clearUpdate(before); ok {
		return []string{u.Call()}, nil
	}
	return []string{}, nil
}

// ClearWatermarks removes every transient watermark override (persistent
// ones, set on purpose, stay) and verifies none is left.
func ClearWatermarks(ctx context.Context, api API) (Change[WatermarkState], error) {
	before, err := Watermarks(ctx, api)
	if err != nil {
		return Change[WatermarkState]{}, err
	}
	u, ok := clearUpdate(before)
	if !ok {
		return Change[WatermarkState]{Before: before, After: before, Acknowledged: true}, nil
	}
	return changeWatermarks(ctx, api, u, func(after WatermarkState) error {
		if left := after.TransientOverrides(); len(left) > 0 {
			keys := make([]string, 0, len(left))
			for _, s := range left {
				keys = append(keys, s.Key)
			}
			return fmt.Errorf("%w: transient %s still set", ErrNotApplied, strings.Join(keys, ", "))
		}
		return nil
	})
}

func changeWatermarks(ctx context.Context, api API, u indexer.SettingsUpdate, verify func(WatermarkState) error) (Change[WatermarkState], error) {
	var ch Change[WatermarkState]
	before, err := Watermarks(ctx, api)
	if err != nil {
		return ch, err
	}
	ch.Before = before
	ack, err := api.PutSettings(ctx, u)
	ch.Acknowledged = ack
	if err != nil {
		return ch, fmt.Errorf("update watermarks: %w", err)
	}
	after, err := Watermarks(ctx, api)
	if err != nil {
		return ch, fmt.Errorf("read back watermarks: %w", err)
	}
	ch.After = after
	ch.Changed = fmt.Sprint(before) != fmt.Sprint(after)
	return ch, verify(after)
}
