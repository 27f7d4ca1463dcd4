//go:build e2e

package upgrade_test

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/testenv"
	"github.com/siemctl/siemctl/lab/e2e"
)

// checkReportInBrowser writes the latest run's report and renders it in headless Chromium (Debian's
// package): the screenshot is not blank, and the numbers in the rendered page are the journal's.
func checkReportInBrowser(t *testing.T, l *e2e.Lab) {
	t.Helper()
	browser := testenv.Tool(t, "scripts/install-deps.sh installs it", "chromium", "chromium-browser")
	d := t.TempDir()
	page := filepath.Join(d, "upgrade.html")
	r := l.Siemctl("upgrade", "report", "--html", page, "--bundle", filepath.Join(d, "evidence.tar.gz"))
	mustCode(t, r, 0, "upgrade report")
	var st struct {
		RunID string `json:"run_id"`
		Time  struct {
			Wall       float64 `json:"wall_s"`
			Components float64 `json:"waiting_on_components_s"`
			Own        float64 `json:"siemctl_own_work_s"`
		} `json:"time"`
		Steps []struct {
			ID       string  `json:"id"`
			Duration float64 `json:"duration_s"`
		} `json:"steps"`
	}
	rs := l.Siemctl("upgrade", "status", "-o", "json")
	if err := json.Unmarshal([]byte(rs.Stdout), &st); err != nil {
		t.Fatalf("status: %v\n%s", err, rs.Stdout)
	}
	run := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + filepath.Join(d, "profile"),
			"--window-size=1100,1600"}
		out, err := exec.CommandContext(ctx, browser, append(base, args...)...).Output()
		if err != nil {
			t.Fatalf("chromium %v: %v", args, err)
		}
		return out
	}
	dom := string(run("--dump-dom", "file://"+page))
	for k, v := range map[string]float64{"wall_s": st.Time.Wall, "waiting_on_components_s": st.Time.Components, "siemctl_own_work_s": st.Time.Own} {
		if want := fmt.Sprintf(`data-k="%s">%.1f s`, k, v); !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %s (the journal's figure)", want)
		}
	}
	for _, s := range st.Steps {
		if want := fmt.Sprintf(`data-seconds="%.3f"`, s.Duration); !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks step %s at %.3fs", s.ID, s.Duration)
		}
	}
	if !strings.Contains(dom, st.RunID) {
		t.Errorf("rendered page does not name run %s", st.RunID)
	}
	shot := filepath.Join(d, "shot.png")
	run("--screenshot="+shot, "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colours := map[uint32]bool{}
	var ink int
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[(r>>11)<<10|(g>>11)<<5|bl>>11] = true
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				ink++
			}
		}
	}
	if total := (b.Dx() / 2) * (b.Dy() / 2); len(colours) < 8 || ink*100 < total {
		t.Errorf("screenshot looks blank: %d colours, %d of %d sampled pixels not white", len(colours), ink, total)
	}
	t.Logf("report rendered: %d colours, %.1f%% ink", len(colours), 100*float64(ink)/float64((b.Dx()/2)*(b.Dy()/2)))
}
