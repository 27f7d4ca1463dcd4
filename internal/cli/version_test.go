package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/buildinfo"
	"github.com/siemctl/siemctl/internal/output"
)

func TestVersionShortAndStamped(t *testing.T) {
	old := [3]string{buildinfo.Version, buildinfo.Commit, buildinfo.Date}
	buildinfo.Version, buildinfo.Commit, buildinfo.Date = "v1.2.3", "0123456789abcdef", "2026-11-23T21:00:00Z"
	t.Cleanup(func() { buildinfo.Version, buildinfo.Commit, buildinfo.Date = old[0], old[1], old[2] })

	io, _, out, errOut := output.Test()
	if code := Main(context.Background(), []string{"version", "--short"}, Stdio{IO: io}, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if out.String() != "v1.2.3\n" {
		t.Fatalf("version --short = %q, want one line \"v1.2.3\\n\"", out.String())
	}

	io, _, out, _ = output.Test()
	if code := Main(context.Background(), []string{"version", "--short", "-o", "json"}, Stdio{IO: io}, nil); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Siemctl buildinfo.Info `json:"siemctl"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Siemctl.Version != "v1.2.3" || doc.Siemctl.Commit != "0123456789abcdef" || doc.Siemctl.Date != "2026-11-23T21:00:00Z" {
		t.Fatalf("json = %+v", doc.Siemctl)
	}
}

func TestVersionShowsCommitAndDate(t *testing.T) {
	old := [3]string{buildinfo.Version, buildinfo.Commit, buildinfo.Date}
	buildinfo.Version, buildinfo.Commit, buildinfo.Date = "v1.2.3", "0123456789abcdef", "2026-11-23T21:00:00Z"
	t.Cleanup(func() { buildinfo.Version, buildinfo.Commit, buildinfo.Date = old[0], old[1], old[2] })
	io, _, out, _ := output.Test()
	_ = Main(context.Background(), []string{"version", "--config", "/nonexistent/siemctl.yaml"}, Stdio{IO: io}, nil)
	for _, want := range []string{"v1.2.3", "0123456789abcdef", "2026-11-23T21:00:00Z"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, out.String())
		}
	}
}
