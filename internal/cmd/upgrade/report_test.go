package upgrade

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/testenv"
	"github.com/siemctl/siemctl/internal/upgrade"
)

// appliedFixture runs the test runbook to success (or, with the partial runbook, to a rollback).
func appliedFixture(t *testing.T, rollback bool) *fixture {
	t.Helper()
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	rb := fx.runbook
	if rollback {
		rb = filepath.Join(t.TempDir(), "partial.yaml")
		clitest.WriteFile(t, rb, partialRunbook, 0o600)
	}
	err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: rb})
	if (err != nil) != rollback {
		t.Fatalf("apply: %v", err)
	}
	fx.out.Reset()
	fx.errOut.Reset()
	return fx
}

func TestReportHTML(t *testing.T) {
	for _, rollback := range []bool{false, true} {
		t.Run(fmt.Sprintf("rollback=%v", rollback), func(t *testing.T) {
			fx := appliedFixture(t, rollback)
			if err := runReport(context.Background(), &ReportOptions{Common: fx.common, HTML: "-"}); err != nil {
				t.Fatal(err)
			}
			page := fx.out.String()
			// Self-contained: no script, no stylesheet link, no URL to fetch.
			if regexp.MustCompile(`(?i)<script|<link|<img|<iframe|(src|href)\s*=|url\(|@import`).MatchString(page) {
				t.Errorf("the page loads something from outside:\n%s", page)
			}
			ri, err := engine.Status(fx.state, "")
			if err != nil {
				t.Fatal(err)
			}
			evs, _, err := engine.ReadJournal(fx.state, ri.ID)
			if err != nil {
				t.Fatal(err)
			}
			// The numbers on the page are the journal's.
			ts := upgrade.SplitTime(evs)
			for k, v := range map[string]time.Duration{"wall_s": ts.Wall, "waiting_on_components_s": ts.Components, "siemctl_own_work_s": ts.Own} {
				want := fmt.Sprintf(`data-k="%s">%.1f s`, k, v.Seconds())
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %s", want)
				}
			}
			for _, s := range ri.Steps {
				want := fmt.Sprintf(`<tr data-step="%s">`, s.ID)
				if !strings.Contains(page, want) || !strings.Contains(page, fmt.Sprintf(`data-seconds="%.3f"`, s.Duration.Seconds())) {
					t.Errorf("page lacks step %s with %.3fs", s.ID, s.Duration.Seconds())
				}
			}
			if !strings.Contains(page, `id="status">`+ri.Status+`<`) {
				t.Errorf("page does not show status %s", ri.Status)
			}
			after := "4.10.0-1"
			if rollback {
				after = "4.9.0-1" // rolled back: the stack is where it was
			}
			if !strings.Contains(page, "<td>indexer</td><td>4.9.0-1</td><td>4.10.0-1</td><td>"+after+"</td>") {
				t.Errorf("versions table missing or wrong (want after %s)", after)
			}
			wantVerdict := `<span class="badge go">go</span>`
			if rollback {
				wantVerdict = `<span class="badge no-go">no-go</span>`
			}
			if !strings.Contains(page, wantVerdict) || !strings.Contains(page, "<svg") {
				t.Errorf("page lacks %s or the timeline", wantVerdict)
			}
		})
	}
}

func TestReportBundle(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed (scripts/install-deps.sh installs openssh-client)")
	}
	fx := appliedFixture(t, false)
	d := t.TempDir()
	key := filepath.Join(d, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "operator@example", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	bundle := filepath.Join(d, "CHG-1.tar.gz")
	page := filepath.Join(d, "report.html")
	if err := runReport(context.Background(), &ReportOptions{Common: fx.common, HTML: page, Bundle: bundle, SignKey: key}); err != nil {
		t.Fatal(err)
	}
	files := testenv.ReadTarGz(t, bundle)
	ri, _ := engine.Status(fx.state, "")
	journal, _ := os.ReadFile(engine.JournalPath(fx.state, ri.ID))
	if !bytes.Equal(files["journal.jsonl"], journal) {
		t.Error("bundle journal differs from the run's journal")
	}
	onDisk, _ := os.ReadFile(page)
	if !bytes.Equal(files["report.html"], onDisk) {
		t.Error("bundle page differs from --html page")
	}
	for _, name := range []string{"run.json", "backups.json", "SHA256SUMS", "SHA256SUMS.sig"} {
		if len(files[name]) == 0 {
			t.Errorf("bundle lacks %s", name)
		}
	}
	// SHA256SUMS lists every other member with its hash.
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(files["SHA256SUMS"])), "\n") {
		sum, name, _ := strings.Cut(line, "  ")
		h := sha256.Sum256(files[name])
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", name)
		}
		listed++
	}
	if listed != len(files)-2 {
		t.Errorf("SHA256SUMS lists %d of %d members", listed, len(files)-2)
	}
	// The signature verifies with the operator's public key.
	pub, _ := os.ReadFile(key + ".pub")
	signers := filepath.Join(d, "allowed_signers")
	os.WriteFile(signers, []byte("operator@example "+string(pub)), 0o600)
	sigFile := filepath.Join(d, "SHA256SUMS.sig")
	os.WriteFile(sigFile, files["SHA256SUMS.sig"], 0o600)
	v := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "operator@example", "-n", "siemctl-report", "-s", sigFile)
	v.Stdin = bytes.NewReader(files["SHA256SUMS"])
	if out, err := v.CombinedOutput(); err != nil {
		t.Errorf("signature does not verify: %v %s", err, out)
	}
	// A link at the output name is refused, and nothing is written through it.
	target := filepath.Join(d, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	link := filepath.Join(d, "link.html")
	os.Symlink(target, link)
	if err := runReport(context.Background(), &ReportOptions{Common: fx.common, HTML: link}); err == nil {
		t.Error("wrote through a symbolic link")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Error("the link's target changed")
	}
}

func TestNewCmdReportFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"--bundle", "x.zip"}, {"--html", "a.html", "--sign-key", "k"}} {
		if got, err := clitest.Parse(NewCmdReport, args...); cli.ExitCode(err) != 2 || got != nil {
			t.Errorf("%v: %v (exit %d, ran: %v), want 2", args, err, cli.ExitCode(err), got != nil)
		}
	}
}
