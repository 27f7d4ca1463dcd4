package health

import (
	"context"
	"fmt"
	"strings"

	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/units"
)

// needsDiagnosis: a unit that failed, is stuck starting or restarts on
// failure has a reason to find; a unit stopped cleanly only needs a start.
func needsDiagnosis(st units.UnitStatus) bool {
	return st.IsFailed() || st.ActiveState == units.Activating || st.SubState == "auto-restart" ||
		(st.Result != "" && st.Result != "success")
}

// unitDiagnosis is the diagnosis of a component's unit, once per run (the
// units check and the component's API check share it).
func unitDiagnosis(ctx context.Context, e *Env, u services.Status) (diagnose.Report, bool) {
	if e.Stack.Diagnose == nil || !u.Found || u.Active || !needsDiagnosis(u.Status) {
		return diagnose.Report{}, false
	}
	rep, err := Shared(ctx, e, "diagnose."+u.Component, func(ctx context.Context) (diagnose.Report, error) {
		all, _ := unitStates(ctx, e)
		return e.Stack.Diagnose(ctx, u.Component, u.Status, all), nil
	})
	return rep, err == nil && rep.Summary() != ""
}

// componentDiagnosis is unitDiagnosis for a component named by its API
// check: the fix of an API that does not answer because its unit failed.
// A unit that runs while its API does not answer is diagnosed too, and
// reported when a cause is found (a port another process holds, a data
// directory it cannot write: the JVM has not said so yet), not when it is
// only still starting.
func componentDiagnosis(ctx context.Context, e *Env, component string) (diagnose.Report, bool) {
	u, known := componentUnit(ctx, e, component)
	if !known {
		return diagnose.Report{}, false
	}
	if e.Stack.Diagnose != nil && u.Found && u.Active {
		rep, err := Shared(ctx, e, "diagnose."+u.Component, func(ctx context.Context) (diagnose.Report, error) {
			all, _ := unitStates(ctx, e)
			return e.Stack.Diagnose(ctx, u.Component, u.Status, all), nil
		})
		k := rep.Cause().Kind
		return rep, err == nil && rep.Summary() != "" && k != diagnose.KindStillStarting && k != diagnose.KindLogLines && k != diagnose.KindNoEvidence
	}
	return unitDiagnosis(ctx, e, u)
}

// judgeOwners adds who holds each listening port to the verdict and marks
// the ports held by a process that is not the component's unit's.
func judgeOwners(ctx context.Context, e *Env, v *hostfacts.PortsVerdict) {
	if e.Stack.PortHolders == nil {
		return
	}
	um := e.Stack.Config.Units()
	_ = v.Owners(ctx, e.Stack.PortHolders, func(ctx context.Context, c string) ([]int, bool) {
		if e.Stack.UnitProcesses == nil || um[c] == "" {
			return nil, false
		}
		ps, err := e.Stack.UnitProcesses(ctx, um[c])
		return ps, err == nil
	})
}

// foreignFix says how to free a port a foreign process holds.
func foreignFix(p hostfacts.PortState, unit string) string {
	return fmt.Sprintf("stop %s, which holds port %d instead of %s (or move it to another port), then siemctl services restart %s",
		p.Holder.Describe(), p.Port, unit, p.Component())
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

func prefixed(prefix string, items []string) string {
	if len(items) == 0 {
		return ""
	}
	return prefix + strings.Join(items, ", ")
}
