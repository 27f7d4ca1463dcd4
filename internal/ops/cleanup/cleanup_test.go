package cleanup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
)

const prefix = "siem-alerts-4.x-"

var now = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

func TestParseIndexDate(t *testing.T) {
	tests := []struct {
		name string
		want string // "" = error
	}{
		{"siem-alerts-4.x-2025.03.09", "2025-03-09"},
		{"siem-alerts-4.x-2024.02.29", "2024-02-29"},
		{"siem-alerts-4.x-2025.02.29", ""}, // not a leap year
		{"siem-alerts-4.x-2025.13.01", ""},
		{"siem-alerts-4.x-2025.00.01", ""},
		{"siem-alerts-4.x-2025.3.9", ""},
		{"siem-alerts-4.x-2025.03.09-reindexed", ""},
		{"siem-alerts-4.x-2025-03-09", ""},
		{"siem-alerts-4.x-*", ""},
		{"siem-alerts-4.x-", ""},
		{"other-2025.03.09", ""},
		{"siem-alerts-4.x-20a5.03.09", ""},
		{"siem-alerts-4.x-2025.03.32", ""},
	}
	for _, tt := range tests {
		got, err := ParseIndexDate(prefix, tt.name)
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: parsed as %s, want an error", tt.name, got)
			}
			continue
		}
		if err != nil || got.Format(time.DateOnly) != tt.want {
			t.Errorf("%s: %v %v, want %s", tt.name, got, err, tt.want)
		}
	}
}

func idx(date string, docs, bytes int64) indexer.Index {
	return indexer.Index{Name: prefix + date, UUID: "u-" + date, DocsCount: docs, StoreBytes: bytes, Status: "open", Health: "green"}
}

func names(p Plan) []string {
	out := []string{}
	for _, ix := range p.Indices {
		out = append(out, ix.Name)
	}
	return out
}

func TestBuildOlderThan(t *testing.T) {
	indices := []indexer.Index{
		idx("2025.03.11", 1, 10), // future
		idx("2025.03.10", 5, 50), // today
		idx("2025.03.09", 4, 40),
		idx("2025.03.08", 3, 30),
		idx("2025.03.07", 2, 20),
		idx("2025.03.01", 1, 10),
		{Name: prefix + "2025.03.05-restored", DocsCount: 9},
		{Name: prefix + "garbage"},
		{Name: "other-index-2020.01.01"},
	}
	tests := []struct {
		age  time.Duration
		want []string
	}{
		// cutoff 2025-03-08T12:00: days ending at or before it go.
		{2 * day, []string{prefix + "2025.03.01", prefix + "2025.03.07"}},
		// 12h: cutoff 2025-03-10T00:00, yesterday's day ended exactly then.
		{12 * time.Hour, []string{prefix + "2025.03.01", prefix + "2025.03.07", prefix + "2025.03.08", prefix + "2025.03.09"}},
		{90 * day, []string{}},
		{1000 * day, []string{}},
	}
	for _, tt := range tests {
		p, err := Build(Input{Prefix: prefix, Indices: indices, Criteria: Criteria{OlderThan: tt.age}, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(p); strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("older than %s: %v, want %v", tt.age, got, tt.want)
		}
		skipped := map[string]string{}
		for _, s := range p.Skipped {
			skipped[s.Name] = s.Reason
		}
		for name, reason := range map[string]string{prefix + "2025.03.11": "future-dated index", prefix + "2025.03.10": "today's index",
			prefix + "garbage": "does not parse", prefix + "2025.03.05-restored": "does not parse"} {
			if !strings.Contains(skipped[name], reason) {
				t.Errorf("%s skipped as %q, want %q", name, skipped[name], reason)
			}
		}
		if _, ok := skipped["other-index-2020.01.01"]; ok {
			t.Error("an index of another prefix is listed")
		}
		if p.Kept+len(p.Indices) != 4 {
			t.Errorf("kept %d + selected %d != 4 dated past indices", p.Kept, len(p.Indices))
		}
		if !strings.HasPrefix(p.Checksum, "sha256:") {
			t.Errorf("checksum %q", p.Checksum)
		}
	}
}

func TestBuildDiskAbove(t *testing.T) {
	indices := []indexer.Index{idx("2025.03.10", 1, 500), idx("2025.03.09", 1, 100), idx("2025.03.08", 1, 100), idx("2025.03.07", 1, 100), idx("2025.03.06", 1, 50)}
	alloc := func(used int64) []indexer.Allocation {
		return []indexer.Allocation{{Node: "n1", DiskUsed: used, DiskTotal: 1000}, {Node: "UNASSIGNED", Shards: 3}}
	}
	tests := []struct {
		used      int64
		limit     int
		want      []string
		projected float64
		warn      string
	}{
		{900, 85, []string{prefix + "2025.03.06", prefix + "2025.03.07"}, 75, ""}, // 90 → 85 → 75
		{850, 85, []string{prefix + "2025.03.06"}, 80, ""},                        // exactly at the limit is not below it
		{840, 85, []string{}, 84, "already below"},
		{1000, 50, []string{prefix + "2025.03.06", prefix + "2025.03.07", prefix + "2025.03.08", prefix + "2025.03.09"}, 65, "still leaves"},
	}
	for _, tt := range tests {
		p, err := Build(Input{Prefix: prefix, Indices: indices, Allocation: alloc(tt.used), Criteria: Criteria{DiskAbove: tt.limit}, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(p); strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("used %d limit %d: %v, want %v", tt.used, tt.limit, got, tt.want)
		}
		if p.Disk == nil || p.Disk.ProjectedPercent != tt.projected {
			t.Errorf("used %d limit %d: disk %+v, want projected %v", tt.used, tt.limit, p.Disk, tt.projected)
		}
		if got := strings.Join(p.Warnings, ";"); (tt.warn == "") != (got == "") || !strings.Contains(got, tt.warn) {
			t.Errorf("used %d limit %d: warnings %q, want %q", tt.used, tt.limit, got, tt.warn)
		}
	}
	if _, err := Build(Input{Prefix: prefix, Indices: indices, Allocation: []indexer.Allocation{{Node: "UNASSIGNED"}}, Criteria: Criteria{DiskAbove: 85}, Now: now}); err == nil {
		t.Error("no disk figures: want an error")
	}
}

func TestBuildBadInput(t *testing.T) {
	tests := []struct {
		in   Input
		want string
	}{
		{Input{Prefix: prefix}, "give an age"},
		{Input{Prefix: prefix, Criteria: Criteria{OlderThan: day, DiskAbove: 85}}, "not both"},
		{Input{Prefix: prefix, Criteria: Criteria{DiskAbove: 100}}, "out of range"},
		{Input{Prefix: "siem-*", Criteria: Criteria{OlderThan: day}}, "without wildcards"},
		{Input{Prefix: "", Criteria: Criteria{OlderThan: day}}, "without wildcards"},
	}
	for _, tt := range tests {
		if _, err := Build(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.in, err, tt.want)
		}
	}
}

func samplePlan(t testing.TB) (Plan, string) {
	t.Helper()
	p, err := Build(Input{Prefix: prefix, Indices: []indexer.Index{idx("2025.01.01", 10, 100), idx("2025.01.02", 20, 200), idx("2025.03.10", 1, 1)},
		Criteria: Criteria{OlderThan: 30 * day, OlderThanText: "30d"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	path := DefaultPlanPath(t.TempDir(), now)
	if err := Write(path, &p, testKey); err != nil {
		t.Fatal(err)
	}
	return p, path
}

func TestLoadRefusesTamperedPlans(t *testing.T) {
	p, path := samplePlan(t)
	got, err := Load(path, testKey)
	if err != nil {
		t.Fatalf("load an untouched plan: %v", err)
	}
	if got.Checksum != p.Checksum || len(got.Indices) != 2 {
		t.Fatalf("round trip: %+v", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("plan mode %v %v, want 0600", fi.Mode(), err)
	}
	orig, _ := os.ReadFile(path)
	tests := []struct {
		name string
		edit func(string) string
		want string
	}{
		{"name widened", func(s string) string {
			return strings.Replace(s, `"name": "siem-alerts-4.x-2025.01.01"`, `"name": "siem-alerts-4.x-*"`, 1)
		}, "checksum mismatch"},
		{"index added", func(s string) string {
			return strings.Replace(s, `"date": "2025-01-01"`, `"date": "2025-01-01", "x": 1`, 1)
		}, "not a cleanup plan"},
		{"checksum removed", func(s string) string { return strings.Replace(s, p.Checksum, "", 1) }, "checksum mismatch"},
		{"not json", func(string) string { return "rm -rf /" }, "not a cleanup plan"},
		{"trailing", func(s string) string { return s + "{}" }, "trailing data"},
	}
	for _, tt := range tests {
		bad := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(bad, []byte(tt.edit(string(orig))), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(bad, testKey)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a refusal %q", tt.name, err, tt.want)
		}
	}
	// A consistent forgery (checksum recomputed) with an unparsable name is
	// still refused by the name check.
	forged := p
	forged.Indices = append([]PlannedIndex{}, p.Indices...)
	forged.Indices[0].Name = prefix + "2025.01.01,other"
	forged.Checksum, _ = checksum(forged)
	fp := filepath.Join(t.TempDir(), "forged.json")
	if err := Write(fp, &forged, testKey); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fp, testKey); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("forged plan: %v", err)
	}
}

// fakeIndexer is an in-memory indexer.
type fakeIndexer struct {
	indices map[string]indexer.Index
	deleted []string
	failOn  string
	calls   []string
}

func newFake(list ...indexer.Index) *fakeIndexer {
	f := &fakeIndexer{indices: map[string]indexer.Index{}}
	for _, ix := range list {
		f.indices[ix.Name] = ix
	}
	return f
}

func (f *fakeIndexer) CatIndices(_ context.Context, pattern string) ([]indexer.Index, error) {
	f.calls = append(f.calls, "cat "+pattern)
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		var out []indexer.Index
		for n, ix := range f.indices {
			if strings.HasPrefix(n, p) {
				out = append(out, ix)
			}
		}
		return out, nil
	}
	ix, ok := f.indices[pattern]
	if !ok {
		return nil, &netclient.Error{Kind: netclient.ErrBadResponse, Status: 404, Err: indexer.ErrIndexNotFound}
	}
	return []indexer.Index{ix}, nil
}

func (f *fakeIndexer) DeleteIndices(_ context.Context, names []string) error {
	f.calls = append(f.calls, "delete "+strings.Join(names, ","))
	for _, n := range names {
		if strings.ContainsAny(n, "*,") {
			return fmt.Errorf("wildcard %q", n)
		}
		if n == f.failOn {
			return &netclient.Error{Kind: netclient.ErrUnreachable, Detail: "connection refused"}
		}
		delete(f.indices, n)
		f.deleted = append(f.deleted, n)
	}
	return nil
}

func TestVerifyAndApply(t *testing.T) {
	p, _ := samplePlan(t)
	a, b := idx("2025.01.01", 10, 100), idx("2025.01.02", 20, 200)
	t.Run("deletes exactly the planned names", func(t *testing.T) {
		f := newFake(a, b, idx("2025.01.03", 1, 1), idx("2025.03.10", 1, 1))
		v, err := Verify(context.Background(), f, p, now)
		if err != nil {
			t.Fatal(err)
		}
		items, err := Apply(context.Background(), f, p, v, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(f.deleted, ",") != a.Name+","+b.Name {
			t.Errorf("deleted %v", f.deleted)
		}
		for _, it := range items {
			if it.Status != StatusDeleted {
				t.Errorf("%s: %s", it.Name, it.Status)
			}
		}
		want := []string{"cat " + prefix + "*", "cat " + a.Name, "delete " + a.Name, "cat " + b.Name, "delete " + b.Name}
		if strings.Join(f.calls, "|") != strings.Join(want, "|") {
			t.Errorf("calls %v, want %v", f.calls, want)
		}
	})
	t.Run("missing index is skipped", func(t *testing.T) {
		f := newFake(b)
		v, err := Verify(context.Background(), f, p, now)
		if err != nil {
			t.Fatal(err)
		}
		if v.Items[0].Status != StatusMissing || len(v.Ready()) != 1 {
			t.Fatalf("%+v", v)
		}
		if _, err := Apply(context.Background(), f, p, v, now, nil); err != nil || len(f.deleted) != 1 {
			t.Errorf("%v %v", err, f.deleted)
		}
	})
	changed := []struct {
		name string
		mut  func(*indexer.Index)
	}{
		{"re-created", func(ix *indexer.Index) { ix.UUID = "new-uuid" }},
		{"documents added", func(ix *indexer.Index) { ix.DocsCount++ }},
	}
	for _, tt := range changed {
		t.Run("refuses a "+tt.name+" index and deletes nothing", func(t *testing.T) {
			a2 := a
			tt.mut(&a2)
			f := newFake(a2, b)
			_, err := Verify(context.Background(), f, p, now)
			if !errors.Is(err, ErrRefused) {
				t.Errorf("verify: %v", err)
			}
			if len(f.deleted) != 0 {
				t.Errorf("deleted %v", f.deleted)
			}
		})
	}
	t.Run("changed between verify and delete stops there", func(t *testing.T) {
		f := newFake(a, b)
		v, err := Verify(context.Background(), f, p, now)
		if err != nil {
			t.Fatal(err)
		}
		bb := b
		bb.UUID = "other"
		f.indices[b.Name] = bb
		items, err := Apply(context.Background(), f, p, v, now, nil)
		if !errors.Is(err, ErrRefused) || len(f.deleted) != 1 || items[1].Status != StatusChanged {
			t.Errorf("%v deleted=%v items=%+v", err, f.deleted, items)
		}
	})
	t.Run("delete failure stops and keeps the error kind", func(t *testing.T) {
		f := newFake(a, b)
		f.failOn = a.Name
		v, _ := Verify(context.Background(), f, p, now)
		items, err := Apply(context.Background(), f, p, v, now, nil)
		if !errors.Is(err, netclient.ErrUnreachable) || len(f.deleted) != 0 || items[0].Status != StatusFailed || items[1].Status != StatusReady {
			t.Errorf("%v %v %+v", err, f.deleted, items)
		}
	})
	t.Run("an index that became today's is refused", func(t *testing.T) {
		f := newFake(a, b)
		// Applying a plan with a clock set back: 2025.01.02 is "today".
		back := time.Date(2025, 1, 2, 8, 0, 0, 0, time.UTC)
		_, err := Verify(context.Background(), f, p, back)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "today's index") || len(f.deleted) != 0 {
			t.Errorf("%v", err)
		}
	})
}

// BenchmarkBuild5000 plans over 5,000 daily indices (about 13.7 years).
func BenchmarkBuild5000(b *testing.B) {
	start := now.AddDate(0, 0, -4999)
	list := make([]indexer.Index, 0, 5000)
	for i := range 5000 {
		d := start.AddDate(0, 0, i)
		list = append(list, indexer.Index{Name: prefix + d.Format(dateLayout), UUID: fmt.Sprintf("u%d", i), DocsCount: int64(i), StoreBytes: 1 << 20})
	}
	// Shuffle deterministically: _cat order is not date order.
	for i := range list {
		j := (i * 7919) % len(list)
		list[i], list[j] = list[j], list[i]
	}
	alloc := []indexer.Allocation{{Node: "n1", DiskUsed: 95 << 30, DiskTotal: 100 << 30}}
	b.Run("older-than", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := Build(Input{Prefix: prefix, Indices: list, Criteria: Criteria{OlderThan: 90 * day}, Now: now})
			if err != nil || len(p.Indices) != 5000-91 {
				b.Fatalf("%v %d", err, len(p.Indices))
			}
		}
	})
	b.Run("disk-above", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := Build(Input{Prefix: prefix, Indices: list, Allocation: alloc, Criteria: Criteria{DiskAbove: 85}, Now: now})
			if err != nil || len(p.Indices) == 0 {
				b.Fatalf("%v %d", err, len(p.Indices))
			}
		}
	})
}

var testKey = []byte("0123456789abcdef0123456789abcdef")

// TestLoadRefusesForgedPlans: a plan apply accepts must come from siemctl on
// this host: right owner and mode, signed with the state_dir key, its own
// cutoff holding for every index, every index pinned by UUID.
func TestLoadRefusesForgedPlans(t *testing.T) {
	p, _ := samplePlan(t)
	write := func(t *testing.T, p Plan, key []byte, mode os.FileMode) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "plan.json")
		if err := Write(path, &p, key); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	resign := func(p Plan) Plan {
		p.Checksum, _ = checksum(p)
		return p
	}
	newer := p
	newer.Indices = append([]PlannedIndex{}, p.Indices...)
	newer.Indices[1] = PlannedIndex{Name: prefix + "2025.03.09", Date: "2025-03-09", UUID: "u-2025.03.09", DocsCount: 1}
	noUUID := p
	noUUID.Indices = append([]PlannedIndex{}, p.Indices...)
	noUUID.Indices[0].UUID = ""
	noCutoff := p
	noCutoff.Cutoff = nil
	tests := []struct {
		name string
		path func(t *testing.T) string
		want []string
	}{
		{"checksum recomputed, no key", func(t *testing.T) string {
			return write(t, resign(p), []byte("another host's key, or a guess!"), 0o600)
		}, []string{"signature does not match", "make a new plan"}},
		{"group-writable", func(t *testing.T) string { return write(t, p, testKey, 0o620) }, []string{"mode 0620", "make a new plan"}},
		{"other-writable", func(t *testing.T) string { return write(t, p, testKey, 0o602) }, []string{"mode 0602"}},
		{"index newer than its own cutoff", func(t *testing.T) string { return write(t, resign(newer), testKey, 0o600) },
			[]string{prefix + "2025.03.09", "after the plan's cutoff", "make a new plan"}},
		{"empty UUID", func(t *testing.T) string { return write(t, resign(noUUID), testKey, 0o600) },
			[]string{prefix + "2025.01.01", "has no UUID", "make a new plan"}},
		{"age plan without cutoff", func(t *testing.T) string { return write(t, resign(noCutoff), testKey, 0o600) },
			[]string{"without its cutoff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.path(t), testKey)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("want a refusal, got %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v lacks %q", err, w)
				}
			}
		})
	}
	if os.Geteuid() == 0 {
		path := write(t, p, testKey, 0o600)
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path, testKey); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("foreign owner: %v", err)
		}
	}
	// Verify: an index without UUID in the plan never matches.
	f := newFake(idx("2025.01.01", 10, 100))
	if _, err := Verify(context.Background(), f, noUUID, now); !errors.Is(err, ErrRefused) {
		t.Errorf("verify with an empty UUID: %v", err)
	}
}

func TestKey(t *testing.T) {
	dir := t.TempDir()
	k1, err := Key(dir)
	if err != nil || len(k1) != 32 {
		t.Fatalf("first key: %d bytes, %v", len(k1), err)
	}
	fi, err := os.Lstat(KeyPath(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v %v", fi.Mode(), err)
	}
	if k2, err := Key(dir); err != nil || string(k2) != string(k1) {
		t.Fatalf("second key differs: %v", err)
	}
	os.Chmod(KeyPath(dir), 0o640)
	if _, err := Key(dir); err == nil || !strings.Contains(err.Error(), "mode 0640") || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("readable key: %v", err)
	}
	// Never through a symlink: a link planted where the key goes is refused
	// and its target is neither read nor written.
	other := t.TempDir()
	target := filepath.Join(other, "target")
	os.WriteFile(target, []byte("0123456789abcdef0123456789abcdef"), 0o600)
	os.MkdirAll(filepath.Join(other, "state", "cleanup"), 0o700)
	if err := os.Symlink(target, KeyPath(filepath.Join(other, "state"))); err != nil {
		t.Fatal(err)
	}
	if _, err := Key(filepath.Join(other, "state")); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlinked key: %v", err)
	}
	dangling := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(filepath.Join(dangling, "cleanup"), 0o700)
	os.Symlink(filepath.Join(other, "created-through-link"), KeyPath(dangling))
	if _, err := Key(dangling); err == nil {
		t.Error("a dangling symlink was followed to create the key")
	}
	if _, err := os.Stat(filepath.Join(other, "created-through-link")); err == nil {
		t.Error("the key was written through a symlink")
	}
}

// FuzzLoad: whatever a plan file holds, Load refuses it or returns a plan
// that keeps every invariant apply relies on.
func FuzzLoad(f *testing.F) {
	_, path := samplePlan(f)
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version":1,"prefix":"siem-alerts-4.x-","indices":[{"name":"siem-alerts-4.x-*"}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "plan.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path, testKey)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("not a refusal: %v", err)
			}
			return
		}
		if got.Signature == "" {
			t.Fatalf("accepted an unsigned plan: %+v", got)
		}
		for _, ix := range got.Indices {
			if _, err := ParseIndexDate(got.Prefix, ix.Name); err != nil || ix.UUID == "" || strings.ContainsAny(ix.Name, "*?,/ ") {
				t.Fatalf("accepted index %+v", ix)
			}
		}
	})
}

// TestArchivesPrefix: with the wazuh profile's extra prefix the plan also
// covers wazuh-archives-4.x-YYYY.MM.DD under the same rules (today's,
// future and unparsable archives never selected), the plan file round-trips
// and Verify/Apply delete exactly the planned names of both prefixes.
func TestArchivesPrefix(t *testing.T) {
	const alerts, archives = "wazuh-alerts-4.x-", "wazuh-archives-4.x-"
	mk := func(name string, docs int64) indexer.Index {
		return indexer.Index{Name: name, UUID: "u-" + name, DocsCount: docs, StoreBytes: docs * 10, Status: "open", Health: "green"}
	}
	list := []indexer.Index{
		mk(alerts+"2025.01.01", 5), mk(archives+"2025.01.01", 50), mk(archives+"2025.01.02", 60),
		mk(archives+"2025.03.10", 7),           // today
		mk(archives+"2025.03.11", 1),           // future
		mk(archives+"2025.01.01-reindexed", 3), // does not parse
		mk("wazuh-monitoring-2025.1w", 9),      // no prefix of ours
	}
	p, err := Build(Input{Prefix: alerts, ExtraPrefixes: []string{archives}, Indices: list,
		Criteria: Criteria{OlderThan: 30 * day, OlderThanText: "30d"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(p), " "); got != alerts+"2025.01.01 "+archives+"2025.01.01 "+archives+"2025.01.02" {
		t.Fatalf("planned %s", got)
	}
	var skipped []string
	for _, s := range p.Skipped {
		skipped = append(skipped, s.Name+"="+s.Reason)
	}
	for _, want := range []string{archives + "2025.03.10=today's index", archives + "2025.03.11=future-dated index", archives + "2025.01.01-reindexed=name does not parse as " + archives + "YYYY.MM.DD"} {
		if !strings.Contains(strings.Join(skipped, "\n"), want) {
			t.Errorf("skipped %v, want %s", skipped, want)
		}
	}
	path := DefaultPlanPath(t.TempDir(), now)
	if err := Write(path, &p, testKey); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(path, testKey)
	if err != nil || strings.Join(loaded.ExtraPrefixes, ",") != archives {
		t.Fatalf("load: %+v %v", loaded.ExtraPrefixes, err)
	}
	f := newFake(list...)
	v, err := Verify(context.Background(), f, loaded, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), f, loaded, v, now, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.deleted, " "); got != alerts+"2025.01.01 "+archives+"2025.01.01 "+archives+"2025.01.02" {
		t.Errorf("deleted %s", got)
	}
	// Prefixes that overlap are refused: an index must belong to one.
	if _, err := Build(Input{Prefix: alerts, ExtraPrefixes: []string{"wazuh-"}, Criteria: Criteria{OlderThan: day}, Now: now}); err == nil {
		t.Error("overlapping prefixes accepted")
	}
	if _, err := Build(Input{Prefix: alerts, ExtraPrefixes: []string{"wazuh-archives-*"}, Criteria: Criteria{OlderThan: day}, Now: now}); err == nil {
		t.Error("a wildcard prefix accepted")
	}
}
