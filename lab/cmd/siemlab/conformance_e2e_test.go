//go:build e2e

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/emu/manager"
	"github.com/siemctl/siemctl/lab/emu/manager/conformance"
)

// checkConformance runs the manager conformance table (the one lab/emu/manager's TestConformance runs
// against the emulator in-process and against managertest) against the lab's running manager: over
// its verified TLS, as the lab's API user, with the faults made the lab's way (the daemons' restart
// marker for 1017, the api-ratelimit fault for 429). It changes users and agents, so it runs last.
func checkConformance(ctx context.Context, t *testing.T, l *lab.Lab, hc *http.Client) {
	t.Helper()
	home := manager.Home{Dir: filepath.Join(l.Root(), l.Profile().InstallDir)}
	target := conformance.Target{
		Name:   "lab",
		URL:    fmt.Sprintf("https://127.0.0.1:%d", l.Ports().API),
		User:   l.Profile().APIUser,
		Pass:   secret(t, l.Dir(), "manager"),
		Client: hc,
		Fault: func(t *testing.T, kind string, on bool) {
			t.Helper()
			var err error
			switch kind {
			case "not-ready":
				marker := filepath.Join(home.RunDir(), ".restart")
				if on {
					err = os.WriteFile(marker, nil, 0o640)
				} else if err = os.Remove(marker); os.IsNotExist(err) {
					err = nil
				}
			case "rate-limit":
				if on {
					err = l.Fault(ctx, "api-ratelimit")
				} else {
					err = l.Heal(ctx, "api-ratelimit")
				}
			default:
				err = fmt.Errorf("unknown conformance fault %q", kind)
			}
			if err != nil {
				t.Fatal(err)
			}
		},
	}
	t.Run("conformance", func(t *testing.T) {
		tally := conformance.Run(t, target)
		t.Logf("conformance lab: %d/%d assertions passed (%d cases)", tally.Passed, tally.Total, len(conformance.Cases))
	})
}
