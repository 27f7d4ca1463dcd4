package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/renameio/v2"
)

var (
	// ErrNotFound: no snapshot matches the reference.
	ErrNotFound = errors.New("snapshot not found")
	// ErrAmbiguous: an ID prefix matches more than one snapshot.
	ErrAmbiguous = errors.New("ambiguous snapshot reference")
	// ErrCorrupt: a file is not a complete snapshot document.
	ErrCorrupt = errors.New("corrupt snapshot")
	// ErrUnsupportedSchema: written by a newer siemctl.
	ErrUnsupportedSchema = errors.New("unsupported snapshot schema")
	// ErrExists: a snapshot with this ID is already stored.
	ErrExists = errors.New("snapshot already exists")
)

// staleTempAge is how old a leftover temporary file (from a capture killed
// while writing) must be before Prune removes it.
const staleTempAge = time.Hour

// Store keeps snapshots as <id>.json files in Dir (state_dir/snapshots).
type Store struct {
	Dir    string
	Logger *slog.Logger // warnings about skipped files; nil discards them

	// beforeRename, when set, runs after the data is written and synced and
	// before the rename that publishes it (crash tests).
	beforeRename func(tmpPath string)
}

// Entry is one stored snapshot, as List reads it (from the file's head).
type Entry struct {
	ID             string  `json:"id"`
	Label          string  `json:"label"`
	TakenAt        string  `json:"taken_at"`
	Host           string  `json:"host"`
	SiemctlVersion string  `json:"siemctl_version"`
	Summary        Summary `json:"summary"`
	Path           string  `json:"path"`
	SizeBytes      int64   `json:"size_bytes"`
}

// Time parses TakenAt.
func (e Entry) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.TakenAt)
	return t
}

func (s *Store) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Store) path(id string) string { return filepath.Join(s.Dir, id+".json") }

// Save writes d atomically as Dir/<id>.json: a temporary file in Dir, fsync,
// rename, fsync of Dir. A crash at any point leaves either no file or the
// complete one, and never touches other snapshots.
func (s *Store) Save(d *Document) (string, error) {
	if !validID(d.ID) {
		return "", fmt.Errorf("save snapshot: invalid id %q", d.ID)
	}
	d.normalize()
	data, err := Marshal(d)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(s.Dir, 0o750); err != nil {
		return "", fmt.Errorf("save snapshot: %w", err)
	}
	dst := s.path(d.ID)
	if _, err := os.Lstat(dst); err == nil {
		return "", fmt.Errorf("save snapshot %s: %w", d.ID, ErrExists)
	}
	if err := writeAtomic(dst, data, 0o640, s.beforeRename); err != nil {
		return "", fmt.Errorf("save snapshot %s: %w", d.ID, err)
	}
	return dst, nil
}

// writeAtomic writes data to dst through a temporary file in dst's directory.
func writeAtomic(dst string, data []byte, perm os.FileMode, beforeRename func(string)) error {
	dir := filepath.Dir(dst)
	pf, err := renameio.NewPendingFile(dst, renameio.WithTempDir(dir), renameio.WithStaticPermissions(perm))
	if err != nil {
		return err
	}
	defer pf.Cleanup() //nolint:errcheck // no-op after a successful replace
	if _, err := pf.Write(data); err != nil {
		return err
	}
	if beforeRename != nil {
		if err := pf.Sync(); err != nil {
			return err
		}
		beforeRename(pf.Name())
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// ReadFile reads and validates one snapshot file.
func ReadFile(path string) (*Document, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	d, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	return d, nil
}

var tempRE = regexp.MustCompile(`^\.[0-9]{8}T[0-9]{6}(\.[0-9]{6})?Z-[0-9a-f]{6}\.json[0-9]+$`)

// ids returns the IDs of the <id>.json files in Dir, sorted; temporary and
// foreign files are skipped.
func (s *Store) ids() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var ids []string
	for _, e := range ents {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || !e.Type().IsRegular() || !validID(id) {
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// List returns the stored snapshots, oldest first. Files that are not
// complete snapshot documents are skipped with a warning.
func (s *Store) List() ([]Entry, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ids))
	for _, id := range ids {
		e, err := readHead(s.path(id))
		if err != nil {
			s.logger().Warn("skipping unreadable snapshot", "file", s.path(id), "err", err)
			continue
		}
		if e.ID != id {
			s.logger().Warn("skipping snapshot whose id does not match its file name", "file", s.path(id), "id", e.ID)
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := out[i].Time(), out[j].Time()
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// readHead reads a snapshot's leading fields without decoding the bulky
// sections, after checking the file is complete (ends with '}').
func readHead(path string) (Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Entry{}, err
	}
	if err := checkTail(f, st.Size()); err != nil {
		return Entry{}, err
	}
	dec := json.NewDecoder(io.NewSectionReader(f, 0, st.Size()))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Entry{}, fmt.Errorf("%w: not a JSON object", ErrCorrupt)
	}
	e := Entry{Path: path, SizeBytes: st.Size()}
	var schema int
	// The head: Document's leading fields up to the summary, which ends it.
	head := map[string]any{"schema_version": &schema, "id": &e.ID, "label": &e.Label, "taken_at": &e.TakenAt,
		"host": &e.Host, "siemctl_version": &e.SiemctlVersion, "summary": &e.Summary}
	haveSummary := false
	for dec.More() && !haveSummary {
		t, err := dec.Token()
		if err != nil {
			return Entry{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		key, _ := t.(string)
		dst, ok := head[key]
		if !ok {
			dst = new(json.RawMessage)
		}
		haveSummary = key == "summary"
		if err := dec.Decode(dst); err != nil {
			return Entry{}, fmt.Errorf("%w: field %s: %w", ErrCorrupt, key, err)
		}
	}
	if err := checkSchema(schema, e.ID); err != nil {
		return Entry{}, err
	}
	if e.Summary.Down == nil {
		e.Summary.Down = []string{}
	}
	return e, nil
}

func checkTail(f io.ReaderAt, size int64) error {
	const n = 64
	off := max(size-n, 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	buf = bytes.TrimRight(buf, " \t\r\n")
	if len(buf) == 0 || buf[len(buf)-1] != '}' {
		return fmt.Errorf("%w: truncated (does not end with '}')", ErrCorrupt)
	}
	return nil
}

// Resolve finds the entry for ref: an ID, a unique ID prefix, "latest",
// "previous" (the one before latest) or "label:NAME" (the newest with that
// label).
func (s *Store) Resolve(ref string) (Entry, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Entry{}, fmt.Errorf("%w: empty reference", ErrNotFound)
	}
	list, err := s.List()
	if err != nil {
		return Entry{}, err
	}
	switch {
	case ref == "latest" || ref == "previous":
		back := 1
		if ref == "previous" {
			back = 2
		}
		if len(list) < back {
			return Entry{}, fmt.Errorf("%w: %s (%d stored)", ErrNotFound, ref, len(list))
		}
		return list[len(list)-back], nil
	case strings.HasPrefix(ref, "label:"):
		label := strings.TrimPrefix(ref, "label:")
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].Label == label {
				return list[i], nil
			}
		}
		return Entry{}, fmt.Errorf("%w: no snapshot labelled %q", ErrNotFound, label)
	}
	var matches []Entry
	for _, e := range list {
		if e.ID == ref {
			return e, nil
		}
		if strings.HasPrefix(e.ID, ref) {
			matches = append(matches, e)
		}
	}
	switch len(matches) {
	case 0:
		return Entry{}, fmt.Errorf("%w: %s", ErrNotFound, ref)
	case 1:
		return matches[0], nil
	}
	ids := make([]string, 0, 3)
	for _, m := range matches[:min(3, len(matches))] {
		ids = append(ids, m.ID)
	}
	return Entry{}, fmt.Errorf("%w: %s matches %d snapshots (%s…)", ErrAmbiguous, ref, len(matches), strings.Join(ids, ", "))
}

// Get reads the snapshot ref designates (see Resolve).
func (s *Store) Get(ref string) (*Document, error) {
	e, err := s.Resolve(ref)
	if err != nil {
		return nil, err
	}
	return ReadFile(e.Path)
}

// Prune deletes snapshots that no rule keeps and returns them. keepN > 0
// keeps the newest keepN; keepDays > 0 keeps those taken within keepDays of
// now; a snapshot either rule keeps stays. The newest is always kept, and
// with no rule nothing is deleted. Temporary files left by an interrupted
// save and older than an hour are removed too; corrupt files are left alone.
func (s *Store) Prune(keepN, keepDays int, now time.Time) ([]Entry, error) {
	doomed, err := s.Prunable(keepN, keepDays, now)
	if err != nil {
		return nil, err
	}
	removed := []Entry{}
	for _, e := range doomed {
		if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("prune snapshot %s: %w", e.ID, err)
		}
		removed = append(removed, e)
	}
	s.removeStaleTemps(now)
	if len(removed) > 0 {
		if err := syncDir(s.Dir); err != nil {
			return removed, fmt.Errorf("prune snapshots: %w", err)
		}
	}
	return removed, nil
}

// Prunable returns the snapshots Prune would delete, deleting nothing (dry
// runs).
func (s *Store) Prunable(keepN, keepDays int, now time.Time) ([]Entry, error) {
	return s.prunable(keepN, keepDays, now, false)
}

// PrunableAfterSave returns the snapshots Prune would delete once a new
// snapshot, taken now, is saved (the dry run of `snapshot capture --keep`).
func (s *Store) PrunableAfterSave(keepN, keepDays int, now time.Time) ([]Entry, error) {
	return s.prunable(keepN, keepDays, now, true)
}

func (s *Store) prunable(keepN, keepDays int, now time.Time, withNew bool) ([]Entry, error) {
	if keepN < 0 || keepDays < 0 {
		return nil, fmt.Errorf("prune snapshots: negative retention (keep %d, keep-days %d)", keepN, keepDays)
	}
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	if withNew {
		// The new snapshot is the newest: always kept, never listed.
		list = append(list, Entry{TakenAt: now.UTC().Format(time.RFC3339Nano)})
	}
	out := []Entry{}
	if keepN == 0 && keepDays == 0 {
		return out, nil
	}
	cutoff := now.Add(-time.Duration(keepDays) * 24 * time.Hour)
	for i, e := range list {
		fromNewest := len(list) - 1 - i
		keep := fromNewest == 0 ||
			(keepN > 0 && fromNewest < keepN) ||
			(keepDays > 0 && !e.Time().Before(cutoff))
		if !keep {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *Store) removeStaleTemps(now time.Time) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !tempRE.MatchString(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < staleTempAge {
			continue
		}
		p := filepath.Join(s.Dir, e.Name())
		if err := os.Remove(p); err != nil {
			s.logger().Warn("cannot remove stale temporary snapshot file", "file", p, "err", err)
		}
	}
}
