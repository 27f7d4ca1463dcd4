package upgrade

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/output"
)

// The confirmation names the data safety mode and what a rollback will and
// will not bring back.
func TestApplyConfirmationSaysWhatRollbackBrings(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.IO.SetTTY(true, true, true)
	fx.common.IO.In = strings.NewReader("n\n")
	if err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook}); !errors.Is(err, output.ErrDeclined) {
		t.Fatalf("declined: %v", err)
	}
	q := fx.errOut.String()
	for _, want := range []string{"services stop while it runs; data safety auto (preflight/data-safety picks a snapshot when the repository is usable, else a cold copy)",
		"a rollback brings back the indexer data as of that snapshot or copy, not documents indexed after it. Proceed? [y/N]"} {
		if !strings.Contains(q, want) {
			t.Errorf("the question %q lacks %q", q, want)
		}
	}
}
