package health

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/ops/verdict"
	"github.com/siemctl/siemctl/internal/units"
)

// ---- host ------------------------------------------------------------------

func checkUnits(ctx context.Context, e *Env) Result {
	if e.Stack.Units == nil {
		return unknown("not checked: no systemd connection configured", "set systemd.address or run on the SIEM host")
	}
	if _, err := unitsConn(ctx, e); err != nil {
		return unknown("cannot reach systemd: "+errSummary(err), "run siemctl on the SIEM host as root, or set systemd.address")
	}
	c := e.Stack.Config
	names := hostUnitNames(c)
	sts, err := unitStates(ctx, e)
	if err != nil {
		return unknown("cannot read unit states: "+errSummary(err), "systemctl status "+strings.Join(names, " "))
	}
	var bad, evidence, fix, causes []string
	active := 0
	for _, u := range services.Judge(c.HostUnits(), sts) {
		st := u.Status
		line := unitLine(st)
		if st.NRestarts > 0 {
			line += fmt.Sprintf(", %d restarts", st.NRestarts)
		}
		if st.MainPID > 0 {
			line += fmt.Sprintf(", pid %d", st.MainPID)
		}
		if u.Active {
			active++
			evidence = append(evidence, line)
			continue
		}
		switch {
		case !u.Found:
			line += " (unit not found: is the package installed?)"
		case st.IsFailed():
			if f := st.Failure(); f != "" {
				line += " (" + f + ")"
			}
		}
		bad = append(bad, st.Name)
		evidence = append(evidence, line)
		if rep, ok := unitDiagnosis(ctx, e, u); ok {
			fix = append(fix, rep.Fix())
			causes = append(causes, st.Name+": "+rep.Summary())
			for _, l := range rep.Lines() {
				evidence = append(evidence, "  "+l)
			}
			continue
		}
		fix = append(fix, u.Fix())
		if lines, err := units.LastLogLines(ctx, st, 3); err == nil {
			for _, l := range lines {
				evidence = append(evidence, "  "+st.Name+" log: "+l)
			}
		}
	}
	r := ok(fmt.Sprintf("%d/%d units active", active, len(sts)), append(evidence, notHere(c)...)...)
	r.Metrics = map[string]float64{"active": float64(active), "total": float64(len(sts))}
	if len(bad) > 0 {
		r.Status = Crit
		r.Summary = fmt.Sprintf("%d/%d units active; not active: %s", active, len(sts), strings.Join(bad, ", "))
		if len(causes) > 0 {
			r.Summary += "; " + strings.Join(causes, "; ")
		}
		r.Fix = verdict.JoinFixes(fix)
	}
	return r
}

// unitLine is "name: active/sub since 2026-11-21T10:00:00Z" (since only
// for an active unit).
func unitLine(st units.UnitStatus) string {
	line := fmt.Sprintf("%s: %s/%s", st.Name, st.ActiveState, st.SubState)
	if !st.ActiveSince.IsZero() && st.IsActive() {
		line += " since " + st.ActiveSince.UTC().Format(time.RFC3339)
	}
	return line
}

// expectedPorts are the ports of the components this host runs that must
// listen on this host (hostfacts.ExpectedOf), and what is not judged here.
func expectedPorts(c *config.Config) ([]hostfacts.ExpectedPort, []string) {
	want, remote := hostfacts.ExpectedOf(c)
	return want, append(remote, notHere(c)...)
}

func checkPorts(ctx context.Context, e *Env) Result {
	if e.Stack.Ports == nil {
		return unknown("not checked: no port probe", "")
	}
	listening, err := e.Stack.Ports(ctx)
	if err != nil {
		return unknown("cannot list listening ports: "+err.Error(), "ss -ltn")
	}
	want, remote := expectedPorts(e.Stack.Config)
	v := hostfacts.JudgePorts(want, remote, listening)
	judgeOwners(ctx, e, &v)
	var evidence, fix, missing, foreign, list []string
	for _, p := range v.Ports {
		list = append(list, strconv.Itoa(p.Port))
		switch {
		case p.Foreign:
			unit := e.Stack.Config.Units()[p.Component()]
			evidence = append(evidence, fmt.Sprintf("%s listening, held by %s: not %s", p, p.Holder.Describe(), unit))
			foreign = append(foreign, fmt.Sprintf("%s held by %s", p, p.Holder.Describe()))
			fix = append(fix, foreignFix(p, unit))
			continue
		case p.Listening && p.Holder != nil:
			evidence = append(evidence, fmt.Sprintf("%s listening: %s", p, p.Holder.Describe()))
			continue
		case p.Listening:
			evidence = append(evidence, p.String()+" listening")
			continue
		}
		evidence = append(evidence, p.String()+" NOT listening")
		missing = append(missing, p.String())
		f := "siemctl services restart " + p.Component()
		if rep, ok := componentDiagnosis(ctx, e, p.Component()); ok {
			f = rep.Fix()
		}
		fix = append(fix, f)
	}
	evidence = append(evidence, v.Remote...)
	if len(missing)+len(foreign) > 0 {
		return crit(joinNonEmpty("; ", prefixed("not the component's: ", foreign), prefixed("not listening: ", missing)), verdict.JoinFixes(fix), evidence...)
	}
	return ok("listening: "+strings.Join(list, " "), evidence...)
}
