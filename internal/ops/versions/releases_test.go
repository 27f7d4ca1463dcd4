package versions

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

func TestReleaseOf(t *testing.T) {
	for v, want := range map[string]string{
		"4.8.1": "2.10.0", "4.9.0": "2.13.0", "4.9.2-1": "2.13.0", "4.10.0": "2.16.0", "4.11.2": "2.16.0",
		"4.12.0": "2.19.1", "4.12.1-1": "2.19.1", "4.13.1": "2.19.2", "4.14.0": "2.19.3", "4.14.1": "2.19.3",
		"4.14.2": "2.19.4", "4.14.4-1": "2.19.4", "4.14.5": "2.19.5", "4.14.7": "2.19.5", "4.14.8": "2.19.6",
	} {
		r, ok := ReleaseOf(v)
		if !ok || r.OpenSearch != want {
			t.Errorf("ReleaseOf(%s) = %+v, %v; want OpenSearch %s", v, r, ok, want)
		}
	}
	for _, v := range []string{"4.7.5", "4.14.9", "4.15.0", "5.0.0", "2.11.1", ""} {
		if r, ok := ReleaseOf(v); ok {
			t.Errorf("ReleaseOf(%s) = %+v: the table does not know it", v, r)
		}
	}
}

// The table is the reference's (../shared/reference/versions-and-agents.md §1), line for line.
func TestReleasesAreTheReferenceTable(t *testing.T) {
	ref := filepath.Join(wazuhreal.Dir(t), "..", "versions-and-agents.md")
	b, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (4\.\d+)\.(x|\d+)(?:–4\.\d+\.(\d+)|, 4\.\d+\.(\d+))? \| [^|]+\| (2\.\d+\.\d+)`)
	rows := row.FindAllStringSubmatch(string(b), -1)
	if len(rows) != len(Releases) {
		t.Fatalf("%d rows in the reference, %d in Releases", len(rows), len(Releases))
	}
	for i, m := range rows {
		from := m[1] + "." + strings.Replace(m[2], "x", "0", 1)
		r := Releases[i]
		if r.From != from || r.OpenSearch != m[5] {
			t.Errorf("row %d: reference %s… on %s, table %+v", i, from, m[5], r)
		}
		if last := m[3] + m[4]; last != "" && r.To != m[1]+"."+last {
			t.Errorf("row %d: reference ends at %s.%s, table at %s", i, m[1], last, r.To)
		}
	}
}

func TestCross(t *testing.T) {
	nodes := func(vs ...string) []indexer.NodeVersion {
		var out []indexer.NodeVersion
		for i, v := range vs {
			out = append(out, indexer.NodeVersion{Name: "node-" + string(rune('1'+i)), Version: v})
		}
		return out
	}
	t.Run("4.12.0 to 4.14.4 changes OpenSearch", func(t *testing.T) {
		p := Cross("4.12.0-1", "4.14.4", nodes("2.19.1"))
		if p.FromOpenSearch != "2.19.1" || p.ToOpenSearch != "2.19.4" || p.Readable || p.NoGo != "" || len(p.Warnings) > 0 {
			t.Fatalf("%+v", p)
		}
		text := strings.Join(p.Lines(), "\n")
		for _, want := range []string{"Wazuh 4.12.0 = OpenSearch 2.19.1 → Wazuh 4.14.4 = OpenSearch 2.19.4", "running now (_nodes): node-1 OpenSearch 2.19.1",
			"old version reads the new data: no", "the copy or the snapshot"} {
			if !strings.Contains(text, want) {
				t.Errorf("lacks %q:\n%s", want, text)
			}
		}
	})
	t.Run("same OpenSearch", func(t *testing.T) {
		p := Cross("4.14.2-1", "4.14.4-1", nil)
		if !p.Readable || len(p.Traps) > 0 || !strings.Contains(p.Rollback, "stays on OpenSearch 2.19.4") {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("codec change", func(t *testing.T) {
		p := Cross("4.11.0", "4.12.0", nil)
		if p.Readable || len(p.Traps) != 1 || !strings.Contains(p.Traps[0], "Lucene99 → Lucene912") || !strings.Contains(p.Rollback, "cannot even read") {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("same codec", func(t *testing.T) {
		p := Cross("4.9.0", "4.10.0", nil)
		if p.Readable || len(p.Traps) > 0 || strings.Contains(p.Rollback, "cannot even read") || !strings.Contains(p.Rollback, "refuses to start on data written by a newer version") {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("5.x is a no-go naming the migration", func(t *testing.T) {
		p := Cross("4.14.4", "5.0.0", nil)
		for _, want := range []string{"no in-place upgrade", "4.x indexed data does not carry over", "4.14.0 or later"} {
			if !strings.Contains(p.NoGo, want) {
				t.Errorf("no-go lacks %q: %s", want, p.NoGo)
			}
		}
		if !strings.Contains(p.Read, "legacy-indices.md") || !strings.HasPrefix(p.Lines()[0], "NO-GO: ") {
			t.Errorf("%+v", p)
		}
	})
	t.Run("a release newer than the table is a warning", func(t *testing.T) {
		p := Cross("4.14.8", "4.14.9", nodes("2.19.6"))
		if p.NoGo != "" || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "does not know Wazuh 4.14.9 (it ends at 4.14.8)") || p.Readable {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("a node on 2.19.0 and a node not the package's", func(t *testing.T) {
		p := Cross("4.12.0", "4.14.1", nodes("2.19.1", "2.19.0"))
		if len(p.Traps) != 1 || !strings.Contains(p.Traps[0], "hot reload") {
			t.Errorf("traps %q", p.Traps)
		}
		if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "node-2 runs OpenSearch 2.19.0, but Wazuh 4.12.0 carries 2.19.1") {
			t.Errorf("warnings %q", p.Warnings)
		}
	})
}

func TestKnown(t *testing.T) {
	nodes := []indexer.NodeVersion{{Name: "node-1", Version: "2.19.4"}, {Name: "node-2", Version: "2.19.0"}}
	got := strings.Join(Known("4.14.4", nodes), "\n")
	for _, want := range []string{"release table: Wazuh 4.14.4's indexer is OpenSearch 2.19.4", "node node-2 runs OpenSearch 2.19.0, not the 2.19.4 of Wazuh 4.14.4", "node node-2: OpenSearch 2.19.0 crashes"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "node node-1 runs") {
		t.Errorf("node-1 runs the release's OpenSearch:\n%s", got)
	}
	if got := Known("4.14.9", nil); len(got) != 1 || !strings.Contains(got[0], "Wazuh 4.14.9 is not in it (it knows 4.8.0 to 4.14.8)") {
		t.Errorf("%q", got)
	}
	v := Judge(Facts{Installed: map[string]string{"indexer": "4.12.0-1", "manager": "4.12.0-1", "dashboard": "4.12.0-1"}, Indexer: []indexer.NodeVersion{{Name: "n", Version: "2.19.1"}}})
	if !v.OK() || !strings.Contains(strings.Join(v.Evidence, "\n"), "release table: Wazuh 4.12.0's indexer is OpenSearch 2.19.1") {
		t.Errorf("%+v", v)
	}
}
