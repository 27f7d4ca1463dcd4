package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadJournal: a journal cut, corrupted or hand-edited anywhere gives
// events, a torn last line, or an error naming the line; never a panic, and
// good never points past the data.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte(`{"type":"run_start","run_id":"r1"}` + "\n" + `{"type":"step_start","step":"a"}` + "\n"))
	f.Add([]byte(`{"type":"run_start"}` + "\n" + `{"type":"step_`))
	f.Add([]byte("not json\n{}\n"))
	f.Add([]byte("\n\n\n"))
	f.Add([]byte(`{"type":"step_done","params":{"password":"x"},"outcome":{"data":{"a":[1,2,{"b":null}]}}}` + "\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, journalName)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		evs, good, torn, err := readJournal(p)
		if err != nil {
			if evs != nil || good != 0 || torn {
				t.Fatalf("error with results: %d events, good %d, torn %v", len(evs), good, torn)
			}
			return
		}
		if good < 0 || good > int64(len(data)) {
			t.Fatalf("good prefix %d of %d bytes", good, len(data))
		}
		// The good prefix reads back as the same events, untorn.
		if err := os.WriteFile(p, data[:good], 0o600); err != nil {
			t.Fatal(err)
		}
		again, g2, torn2, err := readJournal(p)
		if err != nil || torn2 || g2 != good || len(again) != len(evs) {
			t.Fatalf("good prefix re-read: %d events (want %d), good %d (want %d), torn %v, %v", len(again), len(evs), g2, good, torn2, err)
		}
	})
}
