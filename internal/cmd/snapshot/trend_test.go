package snapshot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/golden"
)

func TestListTrend(t *testing.T) {
	fs, ids := twoSnapshots(t)
	run := func(tty bool, args ...string) (string, string, int) {
		f, out, errOut := testFactory(t, fs)
		f.IO.SetTTY(false, tty, false)
		f.IO.SetWidth(80)
		f.IO.DisableColor()
		code := runRoot(t, f, append(append([]string{"snapshot", "list"}, args...), "--config", fs.Config)...)
		return out.String(), errOut.String(), code
	}
	out, _, code := run(false, "--trend", "docs")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	golden.Assert(t, "list-trend-docs.txt", []byte(out))
	out, _, _ = run(true, "--trend", "docs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// The post snapshot has 58 more documents: its bar is the longer one, both labelled.
	if len(lines) != 3 || strings.Count(lines[0], "█") >= strings.Count(lines[1], "█") || !strings.Contains(lines[1], "post 15402") && !strings.HasSuffix(lines[1], "15402") ||
		lines[2] != "documents across 2 snapshots" {
		t.Errorf("trend on a terminal:\n%s", out)
	}
	out, _, _ = run(false, "--trend", "agents", "-o", "json")
	var got struct {
		Metric string
		Points []struct {
			ID    string
			Value int64
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Metric != "agents" || len(got.Points) != 2 || got.Points[0].ID != ids[0] || got.Points[1].Value != 5 {
		t.Errorf("trend -o json: %v\n%s", err, out)
	}
	if _, _, code := run(false, "--trend", "cpu"); code != cli.ExitUsage {
		t.Errorf("--trend cpu: exit %d, want 2", code)
	}
}
