package upgrade

import (
	"fmt"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/steps"
)

// Guided mode's "Health now" judged against the plan (issue 26 §5a): mid-upgrade the units the
// runbook stopped until their phase are down on purpose, and so are the checks of what they
// serve; such a result is EXPECTED (with the phase that starts the unit again), so that a real
// CRIT stands out.

// StoppedByPlan is, for each component a done units.stop step of plan stopped and no done
// units.start has started again, the phase whose units.start starts it ("" when none does).
func StoppedByPlan(plan *steps.Plan, done []string) map[string]string {
	if plan == nil {
		return nil
	}
	isDone := map[string]bool{}
	for _, id := range done {
		isDone[id] = true
	}
	down := map[string]string{}
	for _, s := range plan.Selected() {
		comp, _ := s.Step.With["component"].(string)
		if comp == "" || !isDone[s.ID] {
			continue
		}
		switch s.Step.Kind {
		case "units.stop":
			down[comp] = ""
		case "units.start":
			delete(down, comp)
		}
	}
	for _, s := range plan.Selected() {
		comp, _ := s.Step.With["component"].(string)
		if _, ok := down[comp]; ok && s.Step.Kind == "units.start" && !isDone[s.ID] && !s.Always && down[comp] == "" {
			down[comp] = engine.Phase(s.ID)
		}
	}
	return down
}

// untilPhase is the note of a component the runbook stopped.
func untilPhase(comp, phase string) string {
	if phase == "" {
		return comp + " stopped by the runbook"
	}
	return fmt.Sprintf("%s stopped by the runbook until the %s phase", comp, PhaseLabel(phase))
}

// ExpectedBy says why r is expected at this point of the plan ("" when it is not): every unit
// it finds down, every port it finds closed, or the component it checks was stopped by the
// runbook (down: StoppedByPlan; unitOf: component → unit).
func ExpectedBy(r health.Result, down map[string]string, unitOf map[string]string) string {
	if r.Status == health.OK || len(down) == 0 {
		return ""
	}
	all := func(comps []string) string {
		if len(comps) == 0 {
			return ""
		}
		var notes []string
		for _, c := range comps {
			ph, ok := down[c]
			if !ok {
				return ""
			}
			if n := untilPhase(c, ph); !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
		return strings.Join(notes, "; ")
	}
	switch r.ID {
	case "units": // "2/4 units active; not active: shipper.service, siem-dashboard.service"
		_, list, ok := strings.Cut(r.Summary, "not active: ")
		if !ok {
			return ""
		}
		var comps []string
		for _, u := range strings.Split(list, ", ") {
			comp := ""
			for c, name := range unitOf {
				if name == u {
					comp = c
				}
			}
			if comp == "" {
				return ""
			}
			comps = append(comps, comp)
		}
		return all(comps)
	case "ports": // the fix restarts the component of each closed port
		var comps []string
		for _, f := range strings.Split(r.Fix, "; ") {
			c, ok := strings.CutPrefix(f, "siemctl services restart ")
			if !ok {
				return ""
			}
			comps = append(comps, c)
		}
		return all(comps)
	}
	if _, ok := down[r.Component]; ok {
		return all([]string{r.Component})
	}
	if r.Component == "alerts" { // nothing flows while the manager or the shipper is stopped
		for _, c := range []string{"manager", "shipper", "indexer"} {
			if ph, ok := down[c]; ok {
				return untilPhase(c, ph)
			}
		}
	}
	return ""
}
