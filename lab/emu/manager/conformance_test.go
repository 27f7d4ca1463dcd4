package manager

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/lab/emu/faults"
	"github.com/siemctl/siemctl/lab/emu/manager/conformance"
)

func emulatorTarget(t *testing.T) conformance.Target {
	fx := newAPI(t, 6, nil)
	return conformance.Target{Name: "emulator", URL: fx.srv.URL, User: "siem", Pass: "siem", Fault: func(t *testing.T, kind string, on bool) {
		switch kind {
		case "not-ready":
			p := filepath.Join(fx.home.RunDir(), ".restart")
			if on {
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				_ = os.Remove(p)
			}
		case "rate-limit":
			if err := faults.Set(fx.fdir, faults.APIRateLimit, on); err != nil {
				t.Fatal(err)
			}
		}
	}}
}

func managertestTarget(t *testing.T) conformance.Target {
	s := managertest.New(t, managertest.Config{Agents: managertest.GenerateAgents(6)})
	return conformance.Target{Name: "managertest", URL: s.URL, User: s.Username(), Pass: s.Password(), Fault: func(t *testing.T, kind string, on bool) {
		n := int32(0)
		if on {
			n = 1
		}
		switch kind {
		case "not-ready":
			s.NotReady.Store(n)
		case "rate-limit":
			s.RateLimit.Store(n)
		}
	}}
}

// TestConformance runs the conformance table against both fakes (the lab's running emulator: the e2e
// test TestE2EFullLab in lab/cmd/siemlab) and reports the assertion counts.
func TestConformance(t *testing.T) {
	for _, mk := range []func(*testing.T) conformance.Target{emulatorTarget, managertestTarget} {
		f := mk(t)
		t.Run(f.Name, func(t *testing.T) {
			tally := conformance.Run(t, f)
			t.Logf("conformance %s: %d/%d assertions passed (%d cases)", f.Name, tally.Passed, tally.Total, len(conformance.Cases))
		})
	}
}
