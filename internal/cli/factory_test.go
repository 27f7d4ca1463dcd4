package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/redact"
)

// TestFactoryRedactionBoundary: stdout, stderr and the logger all leave
// siemctl through the factory's Redactor, so a secret it learns is removed
// from each without a redact call at the writer (log lines included).
func TestFactoryRedactionBoundary(t *testing.T) {
	io, _, out, errOut := output.Test()
	f := NewFactory(io, nil)
	f.Redactor.Add("Hunter2.Secret")
	fmt.Fprintln(f.IO.Out, "data Hunter2.Secret")
	fmt.Fprintln(f.IO.ErrOut, "message Hunter2.Secret")
	f.Logger.Warn("security init failed, retrying", "err", errors.New("401 for admin:Hunter2.Secret"))
	for name, got := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
		if strings.Contains(got, "Hunter2") || !strings.Contains(got, redact.Mark) {
			t.Errorf("%s not redacted: %q", name, got)
		}
	}
	if !strings.Contains(errOut.String(), "security init failed") {
		t.Errorf("the log line is missing: %q", errOut.String())
	}
}
