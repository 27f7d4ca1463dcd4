package steps

import (
	"context"
	"fmt"
	"strconv"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
)

// KeyPrimariesRecoveries is the run value indexer.primaries_recoveries records: the persistent
// cluster.routing.allocation.node_initial_primaries_recoveries before the run raised it, so the
// restore (its undo, a later step, a finally-step, a resumed run) puts back exactly that.
const KeyPrimariesRecoveries = "primaries_recoveries"

// keyInitialPrimaries is OpenSearch's throttle of the primaries a node recovers from its own disk
// at once after a start (ThrottlingAllocationDecider; dynamic, default 4).
const keyInitialPrimaries = "cluster.routing.allocation.node_initial_primaries_recoveries"

// recoveriesRecord is what KeyPrimariesRecoveries holds.
type recoveriesRecord struct {
	Was    string `json:"was"`    // the persistent value before; "" = not set (the default 4)
	Raised string `json:"raised"` // the value the run set
}

type recoveriesParams struct {
	pl      *Planning
	Value   int  `yaml:"value"`
	Restore bool `yaml:"restore"`
}

func (p *recoveriesParams) Validate() error {
	if p.Restore != (p.Value == 0) {
		return fmt.Errorf("give value (1-1000: raise) or restore: true (put back what the run found), not both")
	}
	if !p.Restore && (p.Value < 1 || p.Value > 1000) {
		return fmt.Errorf("value %d: want 1 to 1000", p.Value)
	}
	return nil
}

func (p *recoveriesParams) Describe() []string {
	if p.Restore {
		return []string{
			"PUT /_cluster/settings {\"persistent\":{\"" + keyInitialPrimaries + "\":<the value recorded before the run raised it, null when it was unset>}} (skipped when this run did not raise it)",
			"GET /_cluster/settings?flat_settings=true (read back)",
		}
	}
	return []string{
		"GET /_cluster/settings?flat_settings=true (record the persistent " + keyInitialPrimaries + " in the journal)",
		fmt.Sprintf("PUT /_cluster/settings {\"persistent\":{\"%s\":%d}} (the node recovers %d primaries from its disk at once after its start instead of 4: thousands of daily indices come back sooner; put back by the restore steps)", keyInitialPrimaries, p.Value, p.Value),
	}
}

func recoveriesKind(pl *Planning) Kind {
	return engine.Define(Spec[*recoveriesParams]{Name: "indexer.primaries_recoveries",
		New: func() *recoveriesParams { return &recoveriesParams{pl: pl} }, Run: runPrimariesRecoveries})
}

// runPrimariesRecoveries raises the node's initial primaries recoveries (persistently: the
// setting must hold when the node starts again) after recording what was there, or puts that
// back.
func runPrimariesRecoveries(ctx context.Context, env Env, p *recoveriesParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	var rec recoveriesRecord
	recorded, err := env.Get(KeyPrimariesRecoveries, &rec)
	if err != nil {
		return engine.Outcome{}, err
	}
	// The steps run while the node answers: before its stop, after indexer/settled, after
	// finally/allocation-all (which waits for it).
	before, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("read %s: %w", keyInitialPrimaries, err)
	}
	cur, set := before.Persistent[keyInitialPrimaries]
	var want any
	if p.Restore {
		if !recorded {
			return engine.Outcome{Message: "SKIPPED: this run did not raise " + keyInitialPrimaries}, nil
		}
		if rec.Was != "" {
			want = rec.Was
		}
		if cur == rec.Was {
			return engine.Outcome{Message: fmt.Sprintf("%s already %s", keyInitialPrimaries, orDefault(rec.Was)), Data: map[string]any{"was": rec.Was}}, nil
		}
	} else {
		want = strconv.Itoa(p.Value)
		if !recorded { // a resumed or repeated step keeps the first record: the value before the run
			was := ""
			if set {
				was = cur
			}
			rec = recoveriesRecord{Was: was, Raised: strconv.Itoa(p.Value)}
			if err := env.Set(KeyPrimariesRecoveries, rec); err != nil {
				return engine.Outcome{}, err
			}
		}
	}
	if _, err := ix.PutSettings(ctx, indexer.SettingsUpdate{Persistent: map[string]any{keyInitialPrimaries: want}}); err != nil {
		return engine.Outcome{}, fmt.Errorf("set %s=%v: %w", keyInitialPrimaries, orDefault(fmt.Sprint(want)), err)
	}
	after, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("read back %s: %w", keyInitialPrimaries, err)
	}
	got, ok := after.Persistent[keyInitialPrimaries]
	if w, _ := want.(string); got != w || ok != (want != nil) {
		return engine.Outcome{}, fmt.Errorf("%s reads back %s after setting it to %s", keyInitialPrimaries, orDefault(got), orDefault(w))
	}
	data := map[string]any{"was": rec.Was, "now": got}
	if p.Restore {
		return engine.Outcome{Message: fmt.Sprintf("%s back to %s", keyInitialPrimaries, orDefault(got)), Data: data}, nil
	}
	return engine.Outcome{Message: fmt.Sprintf("%s %s → %s (recorded; the restore steps put it back)", keyInitialPrimaries, orDefault(rec.Was), got), Data: data}, nil
}

// orDefault names an unset persistent value.
func orDefault(v string) string {
	if v == "" || v == "<nil>" {
		return "unset (default 4)"
	}
	return v
}
