package cleanup

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
)

// ErrRefused marks a plan that apply refuses as a whole (tampered, invalid
// or stale); nothing was deleted.
var ErrRefused = errors.New("plan refused")

// RefusedError explains why a plan is refused. Exit code 3 (no-go).
type RefusedError struct {
	Reasons []string
}

func (e *RefusedError) Error() string {
	return "plan refused, nothing deleted: " + strings.Join(e.Reasons, "; ")
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refused(format string, args ...any) error {
	return &RefusedError{Reasons: []string{fmt.Sprintf(format, args...)}}
}

// DefaultPlanPath is state_dir/cleanup/plan-<UTC time>.json.
func DefaultPlanPath(stateDir string, now time.Time) string {
	return filepath.Join(stateDir, "cleanup", "plan-"+now.UTC().Format("20060102T150405Z")+".json")
}

// Write signs the plan with key (see Key), setting p.Signature, and stores
// it atomically (0600; parent directories 0700).
func Write(path string, p *Plan, key []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create plan directory: %w", err)
	}
	sig, err := signature(*p, key)
	if err != nil {
		return err
	}
	p.Signature = sig
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	if err := renameio.WriteFile(path, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	return nil
}

// Load reads a plan file and verifies who may have written it (owned by
// root or the running user, not writable by group or others), its format,
// checksum and signature under key, and every index: a literal
// prefix+YYYY.MM.DD name, no duplicates, a date within the plan's own
// cutoff, and a UUID. It does not check dates against the clock: Verify
// does.
func Load(path string, key []byte) (Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return Plan{}, fmt.Errorf("read plan: %w", err)
	}
	defer f.Close()
	if err := checkOwned(f, path, 0o022); err != nil {
		return Plan{}, refused("%v: a plan must be written by siemctl and writable only by its owner; make a new plan (siemctl alerts cleanup --older-than AGE)", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	if err != nil {
		return Plan{}, fmt.Errorf("read plan: %w", err)
	}
	if len(b) > maxPlanBytes {
		return Plan{}, refused("%s is larger than %d MiB: not a cleanup plan", path, maxPlanBytes>>20)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return Plan{}, refused("%s is not a cleanup plan: %v", path, err)
	}
	if dec.More() {
		return Plan{}, refused("%s has trailing data after the plan", path)
	}
	if p.Version != PlanVersion {
		return Plan{}, refused("%s: plan version %d, this siemctl reads version %d", path, p.Version, PlanVersion)
	}
	want, err := checksum(p)
	if err != nil {
		return Plan{}, refused("%s: %v; make a new plan", path, err)
	}
	if p.Checksum != want {
		return Plan{}, refused("%s: checksum mismatch (the plan was modified after it was written); make a new plan", path)
	}
	sig, err := signature(p, key)
	if err != nil {
		return Plan{}, refused("%s: %v; make a new plan", path, err)
	}
	if !hmac.Equal([]byte(p.Signature), []byte(sig)) {
		return Plan{}, refused("%s: the signature does not match this host's plan key (%s): the plan was not written by siemctl on this host, or was edited; make a new plan", path, "state_dir/cleanup/plan.key")
	}
	if p.OlderThan != "" && p.Cutoff == nil {
		return Plan{}, refused("%s: an age plan without its cutoff; make a new plan", path)
	}
	if p.Cutoff != nil && p.Cutoff.After(p.CreatedAt) {
		return Plan{}, refused("%s: cutoff %s is after the plan's creation %s; make a new plan", path, p.Cutoff.Format(time.RFC3339), p.CreatedAt.Format(time.RFC3339))
	}
	seen := make(map[string]bool, len(p.Indices))
	var reasons []string
	for _, ix := range p.Indices {
		if seen[ix.Name] {
			reasons = append(reasons, fmt.Sprintf("%q listed twice", ix.Name))
		}
		seen[ix.Name] = true
		prefix := prefixFor(p.Prefixes(), ix.Name)
		date, err := ParseIndexDate(prefix, ix.Name)
		if err != nil || config.ValidIndexPrefixes(p.Prefixes()) != nil {
			reasons = append(reasons, fmt.Sprintf("%q does not parse as %sYYYY.MM.DD", ix.Name, strings.Join(p.Prefixes(), "YYYY.MM.DD or ")))
			continue
		}
		if date.Format(time.DateOnly) != ix.Date {
			reasons = append(reasons, fmt.Sprintf("%q: date %s does not match its name", ix.Name, ix.Date))
		}
		if p.Cutoff != nil && date.Add(day).After(*p.Cutoff) {
			reasons = append(reasons, fmt.Sprintf("%q: its day ends after the plan's cutoff %s", ix.Name, p.Cutoff.UTC().Format(time.RFC3339)))
		}
		if strings.TrimSpace(ix.UUID) == "" {
			reasons = append(reasons, fmt.Sprintf("%q has no UUID: apply deletes only an index pinned by UUID", ix.Name))
		}
	}
	if len(reasons) > 0 {
		return Plan{}, &RefusedError{Reasons: append(reasons, "make a new plan (siemctl alerts cleanup --older-than AGE)")}
	}
	return p, nil
}

// maxPlanBytes bounds a plan file (a plan of 10 years of daily indices is
// well under 1 MiB).
const maxPlanBytes = 16 << 20

// Indexer is what Verify and Apply need from the indexer client.
type Indexer interface {
	CatIndices(ctx context.Context, pattern string) ([]indexer.Index, error)
	DeleteIndices(ctx context.Context, names []string) error
}

// Status of a planned index at verification.
const (
	StatusReady   = "ready"   // exists and matches the plan
	StatusMissing = "missing" // already gone: nothing to do
	StatusChanged = "changed" // UUID or document count differ: refuse
	StatusUnsafe  = "unsafe"  // today, future or unparsable at apply time: refuse
	StatusDeleted = "deleted"
	StatusFailed  = "failed"
)

// Item is one planned index and its state.
type Item struct {
	PlannedIndex
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Verification is the plan checked against the live indexer.
type Verification struct {
	Items []Item `json:"items"`
}

// Ready lists the names that may be deleted.
func (v Verification) Ready() []string {
	var out []string
	for _, it := range v.Items {
		if it.Status == StatusReady {
			out = append(out, it.Name)
		}
	}
	return out
}

// Verify compares the plan with the live indices at now. A changed or
// unsafe index makes the whole plan refused (a *RefusedError, with the
// verification still returned for display); missing indices are reported
// and skipped.
func Verify(ctx context.Context, ix Indexer, p Plan, now time.Time) (Verification, error) {
	byName := map[string]*indexer.Index{}
	for _, prefix := range p.Prefixes() {
		live, err := ix.CatIndices(ctx, prefix+"*")
		if errors.Is(err, indexer.ErrIndexNotFound) {
			continue
		}
		if err != nil {
			return Verification{}, fmt.Errorf("list %s*: %w", prefix, err)
		}
		for i := range live {
			byName[live[i].Name] = &live[i]
		}
	}
	v := Verification{Items: make([]Item, 0, len(p.Indices))}
	var reasons []string
	for _, pi := range p.Indices {
		it := Item{PlannedIndex: pi}
		if _, why := checkDeletable(prefixFor(p.Prefixes(), pi.Name), pi.Name, now); why != "" {
			it.Status, it.Detail = StatusUnsafe, why
		} else if cur, ok := byName[pi.Name]; !ok {
			it.Status, it.Detail = StatusMissing, "no longer exists"
		} else if d := mismatch(pi, cur); d != "" {
			it.Status, it.Detail = StatusChanged, d
		} else {
			it.Status = StatusReady
		}
		if it.Status == StatusUnsafe || it.Status == StatusChanged {
			reasons = append(reasons, pi.Name+": "+it.Detail)
		}
		v.Items = append(v.Items, it)
	}
	if len(reasons) > 0 {
		reasons = append(reasons, "make a new plan")
		return v, &RefusedError{Reasons: reasons}
	}
	return v, nil
}

func mismatch(pi PlannedIndex, cur *indexer.Index) string {
	switch {
	case pi.UUID == "" || cur.UUID != pi.UUID:
		return fmt.Sprintf("uuid is %s, the plan has %s (index re-created)", cur.UUID, pi.UUID)
	case cur.DocsCount != pi.DocsCount:
		return fmt.Sprintf("has %d documents, the plan has %d", cur.DocsCount, pi.DocsCount)
	}
	return ""
}

// Apply deletes the ready items of v one literal name at a time, checking
// each again right before its deletion. It stops at the first failure or
// mismatch; the returned items say what happened to each. progress (may be
// nil) is called after each item.
func Apply(ctx context.Context, ix Indexer, p Plan, v Verification, now time.Time, progress func(Item)) ([]Item, error) {
	out := make([]Item, 0, len(v.Items))
	items := append([]Item(nil), v.Items...)
	for i, it := range items {
		if it.Status != StatusReady {
			out = append(out, it)
			continue
		}
		if err := ctx.Err(); err != nil {
			return append(out, items[i:]...), err
		}
		if _, why := checkDeletable(prefixFor(p.Prefixes(), it.Name), it.Name, now); why != "" {
			it.Status, it.Detail = StatusUnsafe, why
			out = append(out, it)
			return append(out, items[i+1:]...), &RefusedError{Reasons: []string{it.Name + ": " + why}}
		}
		cur, err := ix.CatIndices(ctx, it.Name)
		var failure error
		switch {
		case errors.Is(err, indexer.ErrIndexNotFound):
			it.Status, it.Detail = StatusMissing, "no longer exists"
		case err != nil:
			it.Status, it.Detail, failure = StatusFailed, err.Error(), err
		case len(cur) != 1 || cur[0].Name != it.Name:
			it.Status, it.Detail = StatusChanged, "the indexer answered for other indices"
		default:
			if d := mismatch(it.PlannedIndex, &cur[0]); d != "" {
				it.Status, it.Detail = StatusChanged, d
			}
		}
		if it.Status == StatusReady {
			if err := ix.DeleteIndices(ctx, []string{it.Name}); err != nil {
				it.Status, it.Detail, failure = StatusFailed, err.Error(), err
			} else {
				it.Status = StatusDeleted
			}
		}
		if progress != nil {
			progress(it)
		}
		out = append(out, it)
		switch it.Status {
		case StatusFailed:
			return append(out, items[i+1:]...), fmt.Errorf("delete %s: %w", it.Name, failure)
		case StatusChanged:
			return append(out, items[i+1:]...), &RefusedError{Reasons: []string{it.Name + ": " + it.Detail, "make a new plan"}}
		}
	}
	return out, nil
}
