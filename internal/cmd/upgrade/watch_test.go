package upgrade

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/output"
)

func TestApplyWatchFlag(t *testing.T) {
	for _, tc := range []struct {
		arg     string
		want    time.Duration
		wantErr string
	}{
		{"20m", 20 * time.Minute, ""},
		{"1d", 24 * time.Hour, ""},
		{"25h", 0, "--watch 25h0m0s: want a window up to 24h0m0s"},
		{"soon", 0, `invalid duration "soon"`},
	} {
		ios, _, _, _ := output.Test()
		f := cli.NewFactory(ios, nil)
		root := cli.NewCmdRoot(f)
		var got *ApplyOptions
		root.AddCommand(NewCmdApply(f, func(_ context.Context, o *ApplyOptions) error { got = o; return nil }))
		root.SetArgs([]string{"apply", "--to", "4.10.0", "--watch", tc.arg})
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		err := root.Execute()
		if tc.wantErr != "" {
			var fe *cli.FlagError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &fe) {
				t.Errorf("--watch %s: err %v, want FlagError %q", tc.arg, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Watch != tc.want {
			t.Errorf("--watch %s: %v, %+v", tc.arg, err, got)
		}
	}
}

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
