package snapshot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/snapshot"
)

// TestDiffTableEveryCase renders, through the command's one diff renderer
// (off a terminal: tab-separated, no colour), every report the snapshot
// package's diff table judges (its diff/*.json goldens: each severity and
// category, none, several, keys and messages with line breaks), so the text
// an operator reads is checked for each of them.
func TestDiffTableEveryCase(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "snapshot", "testdata", "diff", "*.json.golden"))
	if err != nil || len(files) < 20 {
		t.Fatalf("diff reports of the snapshot package: %d found, %v", len(files), err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json.golden")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var d snapshot.DiffJSON
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			io, _, out, _ := output.Test()
			if err := renderDiffTable(io, snapshot.Report{From: d.From, To: d.To, Changes: d.Changes}); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "diff/"+name+".txt", out.Bytes())
		})
	}
}
