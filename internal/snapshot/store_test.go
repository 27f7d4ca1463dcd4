package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
)

// docAt is a small document taken at t with a deterministic ID.
func docAt(t *testing.T, at time.Time, suffix byte, label string) *Document {
	t.Helper()
	opts := fixedOpts()
	opts.Now = func() time.Time { return at }
	opts.Rand = bytes.NewReader([]byte{0xa0, 0x00, suffix})
	opts.Label = label
	return mustCapture(t, healthySource(), opts)
}

func newStore(t *testing.T) (*Store, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	return &Store{Dir: filepath.Join(t.TempDir(), "snapshots"), Logger: slog.New(slog.NewTextHandler(&logs, nil))}, &logs
}

func saveAll(t *testing.T, s *Store, docs ...*Document) {
	t.Helper()
	for _, d := range docs {
		if _, err := s.Save(d); err != nil {
			t.Fatalf("Save %s: %v", d.ID, err)
		}
	}
}

func ids(entries []Entry) string {
	var out []string
	for _, e := range entries {
		out = append(out, e.ID)
	}
	return strings.Join(out, ",")
}

func TestStoreSaveListGet(t *testing.T) {
	s, _ := newStore(t)
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("empty store: %v %v", l, err)
	}
	d1 := docAt(t, fixedNow, 1, "pre-upgrade")
	d2 := docAt(t, fixedNow.Add(time.Hour), 2, "timer")
	d3 := docAt(t, fixedNow.Add(2*time.Hour), 3, "post-upgrade")
	saveAll(t, s, d3, d1, d2) // order of saving does not matter
	if _, err := s.Save(d1); !errors.Is(err, ErrExists) {
		t.Errorf("second save of %s: %v, want ErrExists", d1.ID, err)
	}
	if _, err := s.Save(&Document{ID: "../escape"}); err == nil {
		t.Error("save with a path in the id: no error")
	}

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list), strings.Join([]string{d1.ID, d2.ID, d3.ID}, ","); got != want {
		t.Fatalf("list = %s, want %s", got, want)
	}
	if e := list[0]; e.Label != "pre-upgrade" || e.Summary.Status != "WARN" || e.Summary.Indices != 3 || e.Summary.Agents != 4 || e.SizeBytes == 0 {
		t.Errorf("entry = %+v", e)
	}
	if info, err := os.Stat(list[0].Path); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("file mode: %v %v", info.Mode(), err)
	}

	tests := []struct {
		ref     string
		want    string
		wantErr error
	}{
		{"latest", d3.ID, nil},
		{"previous", d2.ID, nil},
		{d1.ID, d1.ID, nil},
		{"label:timer", d2.ID, nil},
		{"label:nope", "", ErrNotFound},
		{"20261121T1030", d2.ID, nil},   // unique prefix
		{"20261121T", "", ErrAmbiguous}, // three match
		{"2025", "", ErrNotFound},
		{"", "", ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			d, err := s.Get(tc.ref)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || d.ID != tc.want {
				t.Fatalf("got %v %v, want %s", d, err, tc.want)
			}
		})
	}
	got, err := s.Get("latest")
	if err != nil {
		t.Fatal(err)
	}
	if string(mustMarshal(t, got)) != string(mustMarshal(t, d3)) {
		t.Error("stored document differs from the saved one")
	}
}

func TestStoreSkipsCorruptFiles(t *testing.T) {
	s, logs := newStore(t)
	good := docAt(t, fixedNow, 1, "")
	saveAll(t, s, good)
	full := mustMarshal(t, good)
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(s.Dir, name), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write("20261121T100000Z-000001.json", full[:len(full)/2])                                                         // truncated
	write("20261121T110000Z-000002.json", []byte("garbage\n"))                                                        // not JSON
	write("20261121T120000Z-000003.json", []byte(`{"schema_version":99,"id":"20261121T120000Z-000003"}`))             // newer schema
	write("20261121T130000Z-000004.json", bytes.Replace(full, []byte(good.ID), []byte("20261121T000000Z-ffffff"), 1)) // id mismatch
	write("20261121T140000Z-000005.json", []byte(`{}`))                                                               // no id
	write("."+good.ID+".json123456", full[:100])                                                                      // temp file of a save
	write("notes.txt", []byte("hello"))                                                                               // foreign
	if err := os.Mkdir(filepath.Join(s.Dir, "20261121T150000Z-000006.json"), 0o750); err != nil {
		t.Fatal(err)
	}

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if ids(list) != good.ID {
		t.Fatalf("list = %s, want only %s", ids(list), good.ID)
	}
	for _, f := range []string{"000001", "000002", "000003", "000004", "000005"} {
		if !strings.Contains(logs.String(), f) {
			t.Errorf("no warning about %s in:\n%s", f, logs.String())
		}
	}
	if strings.Contains(logs.String(), "json123456") {
		t.Error("warned about a temporary file")
	}
	if _, err := s.Get("latest"); err != nil {
		t.Errorf("latest with corrupt neighbours: %v", err)
	}
	if _, err := ReadFile(filepath.Join(s.Dir, "20261121T100000Z-000001.json")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadFile truncated: %v, want ErrCorrupt", err)
	}
	if _, err := ReadFile(filepath.Join(s.Dir, "20261121T120000Z-000003.json")); !errors.Is(err, ErrUnsupportedSchema) {
		t.Errorf("ReadFile schema 99: %v, want ErrUnsupportedSchema", err)
	}
}

func TestStorePrune(t *testing.T) {
	now := fixedNow.Add(10 * 24 * time.Hour)
	// One snapshot a day for 10 days: day 0 … day 9.
	mk := func(t *testing.T) (*Store, []*Document) {
		s, _ := newStore(t)
		var docs []*Document
		for i := range 10 {
			d := docAt(t, fixedNow.Add(time.Duration(i)*24*time.Hour), byte(i), "")
			docs = append(docs, d)
		}
		saveAll(t, s, docs...)
		return s, docs
	}
	tests := []struct {
		name           string
		keepN, keepDay int
		wantKept       []int
		wantErr        bool
	}{
		{"no rule deletes nothing", 0, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, false},
		{"keep 3", 3, 0, []int{7, 8, 9}, false},
		{"keep 1", 1, 0, []int{9}, false},
		{"keep more than stored", 50, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, false},
		{"keep 4 days", 0, 4, []int{6, 7, 8, 9}, false},
		{"either rule keeps", 2, 4, []int{6, 7, 8, 9}, false},
		{"either rule keeps (n wider)", 5, 1, []int{5, 6, 7, 8, 9}, false},
		{"newest kept even when too old", 0, 0, nil, false},
		{"negative", -1, 0, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, docs := mk(t)
			if tc.name == "newest kept even when too old" {
				if _, err := s.Prune(0, 1, now.Add(365*24*time.Hour)); err != nil {
					t.Fatal(err)
				}
				list, _ := s.List()
				if ids(list) != docs[9].ID {
					t.Fatalf("kept %s, want only the newest", ids(list))
				}
				return
			}
			removed, err := s.Prune(tc.keepN, tc.keepDay, now)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, i := range tc.wantKept {
				want = append(want, docs[i].ID)
			}
			list, _ := s.List()
			if ids(list) != strings.Join(want, ",") {
				t.Errorf("kept %s\nwant %s", ids(list), strings.Join(want, ","))
			}
			if len(removed)+len(list) != 10 {
				t.Errorf("removed %d + kept %d != 10", len(removed), len(list))
			}
		})
	}
}

func TestPruneRemovesOnlyStaleTemps(t *testing.T) {
	s, _ := newStore(t)
	saveAll(t, s, docAt(t, fixedNow, 1, ""))
	stale := filepath.Join(s.Dir, ".20261121T000000Z-000001.json4242")
	fresh := filepath.Join(s.Dir, ".20261121T000000Z-000002.json4243")
	other := filepath.Join(s.Dir, ".keepme")
	for _, p := range []string{stale, fresh, other} {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := fixedNow.Add(24 * time.Hour)
	if err := os.Chtimes(stale, now.Add(-2*time.Hour), now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(fresh, now.Add(-time.Minute), now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(5, 0, now); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{stale: false, fresh: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists=%v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

const crashEnv = "SIEMCTL_SNAPSHOT_CRASH_DIR"

// TestHelperCrashingSave is not a test: run as a subprocess by
// TestSaveKilledMidWrite, it writes a snapshot, reports the temporary file
// and waits to be killed before the rename.
func TestHelperCrashingSave(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	s := &Store{Dir: dir, beforeRename: func(tmp string) {
		fmt.Printf("READY %s\n", tmp)
		os.Stdout.Sync()      //nolint:errcheck
		time.Sleep(time.Hour) // killed long before
	}}
	d := docAt(t, fixedNow.Add(5*time.Hour), 9, "doomed")
	if _, err := s.Save(d); err != nil {
		t.Fatal(err)
	}
	t.Fatal("save completed although it should have been killed")
}

func TestSaveKilledMidWrite(t *testing.T) {
	s, _ := newStore(t)
	d1 := docAt(t, fixedNow, 1, "one")
	d2 := docAt(t, fixedNow.Add(time.Hour), 2, "two")
	saveAll(t, s, d1, d2)
	before := map[string][]byte{}
	for _, d := range []*Document{d1, d2} {
		b, err := os.ReadFile(s.path(d.ID))
		if err != nil {
			t.Fatal(err)
		}
		before[d.ID] = b
	}

	line := testenv.KillHelperAt(t, "TestHelperCrashingSave", crashEnv+"="+s.Dir, "READY ", "the rename")
	tmp := strings.TrimSpace(strings.TrimPrefix(line, "READY "))

	// The temporary file is there, the snapshot is not published, the
	// previous ones are byte for byte intact and List ignores the debris.
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("temporary file %s: %v (the kill did not happen mid-write?)", tmp, err)
	}
	if filepath.Dir(tmp) != s.Dir {
		t.Errorf("temporary file %s is not in the snapshot directory", tmp)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if ids(list) != d1.ID+","+d2.ID {
		t.Fatalf("list after crash = %s", ids(list))
	}
	for id, want := range before {
		if got, err := os.ReadFile(s.path(id)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s changed by the crash: %v", id, err)
		}
	}
	if latest, err := s.Get("latest"); err != nil || latest.ID != d2.ID {
		t.Errorf("latest after crash = %v %v", latest, err)
	}
	// A later capture works, and prune clears the debris once stale.
	saveAll(t, s, docAt(t, fixedNow.Add(6*time.Hour), 3, "after"))
	if _, err := s.Prune(10, 0, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file survived prune: %v", err)
	}
}

// Two captures in the same second: latest and previous follow capture order
// whatever the random suffixes, and an old second-precision snapshot from an
// older siemctl is still listed, in time order.
func TestSameSecondCapturesKeepCaptureOrder(t *testing.T) {
	s, _ := newStore(t)
	first := docAt(t, fixedNow.Add(100*time.Millisecond), 0xff, "first")
	second := docAt(t, fixedNow.Add(600*time.Millisecond), 0x01, "second")
	if !(first.ID < second.ID) || first.Time().Equal(second.Time()) {
		t.Fatalf("ids %s %s / taken_at %s %s do not order the captures", first.ID, second.ID, first.TakenAt, second.TakenAt)
	}
	if first.TakenAt != "2026-11-21T09:30:00.100000Z" || first.ID != "20261121T093000.100000Z-a000ff" {
		t.Errorf("taken_at %s id %s", first.TakenAt, first.ID)
	}
	// Written by an older siemctl: whole seconds in id and taken_at.
	old := docAt(t, fixedNow.Add(-time.Second), 0x05, "old")
	old.ID, old.TakenAt = "20261121T092959Z-a00005", "2026-11-21T09:29:59Z"
	saveAll(t, s, second, old, first)
	l, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(l), old.ID+","+first.ID+","+second.ID; got != want {
		t.Errorf("list order %s, want %s", got, want)
	}
	for ref, want := range map[string]string{"latest": second.ID, "previous": first.ID, old.ID[:10]: "", "20261121T092959": old.ID} {
		e, err := s.Resolve(ref)
		switch {
		case want == "" && !errors.Is(err, ErrAmbiguous):
			t.Errorf("%s: %v, want ambiguous", ref, err)
		case want != "" && (err != nil || e.ID != want):
			t.Errorf("%s = %s (%v), want %s", ref, e.ID, err, want)
		}
	}
	if d, err := s.Get(old.ID); err != nil || !d.Time().Equal(fixedNow.Add(-time.Second)) {
		t.Errorf("old snapshot: %v %v", d, err)
	}
}
