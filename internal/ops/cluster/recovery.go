package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/indexer"
)

// The recovery settings (dynamic cluster settings): after a start an OpenSearch node brings its
// primary shards back from its own disk node_initial_primaries_recoveries (default 4) at a time,
// and the primaries of a snapshot restore count against the same throttle; peer recoveries
// against node_concurrent_recoveries (default 2). The upgrade raises them and puts back exactly
// what it found (the step kinds indexer.primaries_recoveries and restore.indexer_snapshot keep
// the record in the run's journal).

// The recovery settings.
const (
	KeyInitialPrimaries     = "cluster.routing.allocation.node_initial_primaries_recoveries"
	KeyConcurrentRecoveries = "cluster.routing.allocation.node_concurrent_recoveries"
)

// RecoverySettings are recorded together, in this order; recoveryDefaults are their OpenSearch
// defaults.
var (
	RecoverySettings = []string{KeyInitialPrimaries, KeyConcurrentRecoveries}
	recoveryDefaults = map[string]string{KeyInitialPrimaries: "4", KeyConcurrentRecoveries: "2"}
)

// SettingRecord is one recovery setting as a run found and raised it.
type SettingRecord struct {
	Was    string `json:"was"`              // the persistent value before the run; "" = not set (the default)
	Raised string `json:"raised,omitempty"` // the value a step of the run set; "" = never raised
}

// Recoveries is a run's record of the recovery settings: setting → record.
type Recoveries map[string]SettingRecord

// UnmarshalJSON also reads the record's first form, {"was","raised"} of the initial primaries
// recoveries alone (journals of earlier versions, a rollback of their upgrade runs).
func (r *Recoveries) UnmarshalJSON(b []byte) error {
	var first struct {
		Was    *string `json:"was"`
		Raised string  `json:"raised"`
	}
	if err := json.Unmarshal(b, &first); err == nil && first.Was != nil {
		*r = Recoveries{KeyInitialPrimaries: {Was: *first.Was, Raised: first.Raised}}
		return nil
	}
	m := map[string]SettingRecord{}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*r = m
	return nil
}

// ShortKey names a setting without its cluster.routing.allocation. prefix.
func ShortKey(k string) string { return strings.TrimPrefix(k, "cluster.routing.allocation.") }

// ShortKeys names settings ks without their prefix, ", "-joined.
func ShortKeys(ks []string) string {
	short := make([]string, len(ks))
	for i, k := range ks {
		short[i] = ShortKey(k)
	}
	return strings.Join(short, ", ")
}

// orDefault names an unset persistent value of recovery setting k.
func orDefault(k, v string) string {
	if v == "" || v == "<nil>" {
		return "unset (default " + recoveryDefaults[k] + ")"
	}
	return v
}

// DescribeRaise is the plan of a raise of want (setting → value), for why.
func DescribeRaise(want map[string]int, why string) []string {
	var set []string
	for _, k := range RecoverySettings {
		if v, ok := want[k]; ok {
			set = append(set, fmt.Sprintf("%q:%d", k, v))
		}
	}
	return []string{
		"GET /_cluster/settings?flat_settings=true (record " + ShortKeys(RecoverySettings) + " in the journal, once per run)",
		"PUT /_cluster/settings {\"persistent\":{" + strings.Join(set, ",") + "}} (" + why + "; read back; put back by the restore steps)",
	}
}

// PlanRaise records in rec every recovery setting it lacks as persistent holds it now and the
// values of want (setting → value): it returns the update to put and the changes in words.
func PlanRaise(rec Recoveries, persistent map[string]string, want map[string]int) (upd map[string]any, changes []string) {
	upd = map[string]any{}
	for _, k := range RecoverySettings {
		r, ok := rec[k]
		if !ok {
			r = SettingRecord{Was: persistent[k]}
		}
		if v, raise := want[k]; raise {
			r.Raised = strconv.Itoa(v)
			upd[k] = r.Raised
			changes = append(changes, fmt.Sprintf("%s %s → %s", ShortKey(k), orDefault(k, r.Was), r.Raised))
		}
		rec[k] = r
	}
	return upd, changes
}

// Raised are the settings rec says the run raised, in order.
func (r Recoveries) Raised() []string {
	return slices.DeleteFunc(slices.Clone(RecoverySettings), func(k string) bool { return r[k].Raised == "" })
}

// PlanRestore is the update that puts back every raised setting as rec recorded it before the
// run (nil: remove the persistent value), given persistent now: empty when all are back; back
// names each setting's value after it.
func PlanRestore(rec Recoveries, persistent map[string]string) (upd map[string]any, back []string) {
	upd = map[string]any{}
	for _, k := range rec.Raised() {
		was := rec[k].Was
		back = append(back, ShortKey(k)+" "+orDefault(k, was))
		if persistent[k] == was {
			continue
		}
		upd[k] = nil // null removes the persistent value
		if was != "" {
			upd[k] = was
		}
	}
	return upd, back
}

// SettingsAPI reads and writes the cluster settings (*indexer.Client).
type SettingsAPI interface {
	Settings(ctx context.Context, includeDefaults bool) (indexer.Settings, error)
	PutSettings(ctx context.Context, u indexer.SettingsUpdate) (bool, error)
}

// PutRecoveries sets upd persistently (nil: remove) and reads every key back.
func PutRecoveries(ctx context.Context, ix SettingsAPI, upd map[string]any) error {
	keys := slices.Sorted(maps.Keys(upd))
	if _, err := ix.PutSettings(ctx, indexer.SettingsUpdate{Persistent: upd}); err != nil {
		return fmt.Errorf("set %s: %w", ShortKeys(keys), err)
	}
	after, err := ix.Settings(ctx, false)
	if err != nil {
		return fmt.Errorf("read back %s: %w", ShortKeys(keys), err)
	}
	for _, k := range keys {
		w, _ := upd[k].(string)
		got, ok := after.Persistent[k]
		if got != w || ok != (upd[k] != nil) {
			return fmt.Errorf("%s reads back %s after setting it to %s", k, orDefault(k, got), orDefault(k, w))
		}
	}
	return nil
}
