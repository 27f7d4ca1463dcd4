package upgrade

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
)

// --watch with a runbook (or a selection) without the watch step is a
// usage error before anything runs.
func TestApplyWatchNeedsTheStep(t *testing.T) {
	fx := newFixture(t, "4.9.0-1")
	fx.common.Yes = true
	err := runApply(context.Background(), &ApplyOptions{Common: fx.common, To: "4.10.0", Runbook: fx.runbook, Watch: time.Minute})
	var fe *cli.FlagError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "selects no watch.window step") {
		t.Fatalf("%v", err)
	}
	if fx.apt.installed["siem-indexer"] != "4.9.0-1" || len(fx.srv.Requests()) != 0 {
		t.Fatal("ran without the watch step")
	}
}
