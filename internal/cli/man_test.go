package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cmd/register"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/output"
)

// Every command gets its own page, titled after it, with the EXIT STATUS, ENVIRONMENT and
// FILES sections in man's order (before SEE ALSO); siemctl-version.1 is a golden file.
func TestManPages(t *testing.T) {
	io, _, _, _ := output.Test()
	f := cli.NewFactory(io, nil)
	root := cli.NewCmdRoot(f)
	register.All(root, f)
	dir := t.TempDir()
	date := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := cli.WriteManPages(root, dir, &date); err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	names := map[string]bool{}
	for _, p := range pages {
		names[filepath.Base(p)] = true
	}
	for _, want := range []string{"siemctl.1", "siemctl-health.1", "siemctl-snapshot-capture.1", "siemctl-upgrade-apply.1", "siemctl-rollback.1", "siemctl-version.1"} {
		if !names[want] {
			t.Errorf("no page %s (have %d pages)", want, len(pages))
		}
	}
	for _, p := range pages {
		b, _ := os.ReadFile(p)
		page := string(b)
		name := strings.TrimSuffix(filepath.Base(p), ".1")
		title := `.TH "` + strings.ToUpper(name) + `" "1"`
		if !strings.Contains(page, title) {
			t.Errorf("%s: not titled %s", name, title)
		}
		last := -1
		for _, sec := range []string{".SH NAME", ".SH SYNOPSIS", ".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", ".SH SEE ALSO"} {
			i := strings.Index(page, "\n"+sec+"\n")
			if i <= last {
				t.Errorf("%s: section %q missing or out of order", name, sec)
			}
			last = i
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "siemctl-version.1"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "siemctl-version.1", b)
}
