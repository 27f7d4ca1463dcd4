package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/fleet"
)

// ---- manager ---------------------------------------------------------------

func checkManagerAPI(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	if err := e.Stack.Manager.Err(); err != nil {
		return noClient("manager", err, true)
	}
	insecureNote(e, c.Manager.Insecure, "manager API", "manager")
	info, err := managerInfo(ctx, e)
	if err != nil {
		if manager.HasCode(err, manager.CodeDaemonsNotReady) || errors.Is(err, netclient.ErrNotReady) {
			return daemonsNotReady(ctx, e, err)
		}
		fix, ev := managerAPIFix(ctx, e, err)
		return crit(errSummary(err), fix, append([]string{c.Manager.APIURL}, ev...)...)
	}
	evidence := []string{fmt.Sprintf("%s %s (revision %d) on %s", info.Title, info.APIVersion, info.Revision, info.Hostname)}
	st, err := managerStatus(ctx, e)
	if err != nil {
		return warn(fmt.Sprintf("API %s answers, but daemon states unreadable: %s", info.APIVersion, errSummary(err)), "siemctl services status manager", evidence...)
	}
	if down := st.Down(); len(down) > 0 {
		return crit("daemon(s) down: "+strings.Join(down, ", "), daemonsDownFix(c, down), evidence...)
	}
	if nr := st.NotReady(); len(nr) > 0 {
		return crit("daemons not ready: "+strings.Join(nr, ", "), "wait a minute after a restart; if it persists: siemctl services restart manager", evidence...)
	}
	return ok(fmt.Sprintf("API %s, login as %s, daemons ready", info.APIVersion, c.Manager.Username), evidence...)
}

// daemonsNotReady explains a 1017 answer: which basic daemons are not
// ready, read from the answer itself, /manager/status (only with a token
// already held: a fresh login is refused with 1017 too) or the control
// tool's status. A failed or stopped daemon gets its real fix; only
// starting or restarting ones mean "wait".
func daemonsNotReady(ctx context.Context, e *Env, apiErr error) Result {
	c := e.Stack.Config
	ev := []string{c.Manager.APIURL}
	states := manager.DaemonStates{}
	if named, ok := manager.NotReadyError(apiErr); ok {
		maps.Copy(states, named)
	}
	if st, err := managerStatus(ctx, e); err == nil {
		maps.Copy(states, st)
		ev = append(ev, "daemon states from GET /manager/status")
	} else if e.Stack.Tools != nil {
		if cs, err := e.Stack.Tools.ControlStatus(ctx); err == nil {
			for name, state := range cs.States() {
				// the tool only knows running / not running: keep the API's finer state
				if prev, known := states[name]; !known || state == manager.DaemonRunning || prev == manager.DaemonRunning {
					states[name] = state
				}
			}
			ev = append(ev, "daemon states from "+c.Manager.ControlTool+" status")
		} else {
			ev = append(ev, c.Manager.ControlTool+" status: "+err.Error())
		}
	}
	if down := states.Down(); len(down) > 0 {
		return crit("daemon(s) down (1017): "+strings.Join(down, ", "), daemonsDownFix(c, down), append(ev, errSummary(apiErr))...)
	}
	return crit("daemons not ready (1017): "+errSummary(apiErr), "wait a minute after a restart (siemctl health again); if it persists: siemctl services restart manager", ev...)
}

// daemonsDownFix is the real fix for failed or stopped basic daemons
// ("wazuh-analysisd (failed)"): their own error in ossec.log, a
// configuration check for analysisd (rules and decoders), then a restart.
func daemonsDownFix(c *config.Config, down []string) string {
	logFile := filepath.Join(c.Manager.InstallDir, "logs", "ossec.log")
	var names []string
	var steps []string
	for _, d := range down {
		name, _, _ := strings.Cut(d, " ")
		names = append(names, name)
	}
	steps = append(steps, fmt.Sprintf("look at %s for the error of %s (grep -E '%s' %s | tail)", logFile, strings.Join(names, ", "),
		strings.Join(names, "|"), logFile))
	for _, n := range names {
		if strings.HasSuffix(n, "-analysisd") {
			steps = append(steps, fmt.Sprintf("check the rules, decoders and ossec.conf: %s -t (or siemctl rules check)",
				filepath.Join(c.Manager.InstallDir, "bin", n)))
		}
	}
	steps = append(steps, fmt.Sprintf("fix it, then %s restart (or siemctl services restart manager)",
		filepath.Join(c.Manager.InstallDir, "bin", c.Manager.ControlTool)))
	return strings.Join(steps, "; ")
}

// managerAPIFix proposes the fix for a manager API that did not answer,
// following the unit's state: an active unit with a slow API is not a
// reason to start anything (look at the API log and the load, retry with
// more time); otherwise the "units inactive" verdict's fix (start a stopped
// unit, restart a failed one, install a missing one).
func managerAPIFix(ctx context.Context, e *Env, err error) (string, []string) {
	fix := fixFor(err, "manager", "manager.ca_file", "manager.username")
	slow := errors.Is(err, netclient.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
	if !slow && !errors.Is(err, netclient.ErrUnreachable) {
		return fix, nil
	}
	c := e.Stack.Config.Manager
	apiLog := filepath.Join(c.InstallDir, "logs", "api.log")
	u, known := componentUnit(ctx, e, "manager")
	if !known {
		if slow {
			return fmt.Sprintf("siemctl services status manager: if %s is active the API is slow (look at %s and the host's load, retry with a longer --timeout), else siemctl services start manager", c.Unit, apiLog), nil
		}
		return fix, nil
	}
	ev := []string{"unit " + unitLine(u.Status)}
	switch {
	case u.Active && slow:
		return fmt.Sprintf("the unit is active but its API is slow: look at %s and the host's load (top), then retry with a longer --timeout (e.g. --timeout 30s)", apiLog), ev
	case u.Active:
		return fmt.Sprintf("the unit is active but nothing answers on %s: look at %s (did the API start?), then siemctl services restart manager", c.APIURL, apiLog), ev
	}
	if rep, ok := unitDiagnosis(ctx, e, u); ok {
		return rep.Fix(), append(ev, rep.Lines()...)
	}
	return u.Fix() + " (then siemctl services status manager)", ev
}

// checkManagerConfig judges the manager's configuration: ossec.conf (through the API's validation,
// else the control tool) and, on a host that runs the manager, the API's own api.yaml, which the
// API reads only at its start, so a broken edit shows at the next restart as an API that does not
// come back.
func checkManagerConfig(ctx context.Context, e *Env) Result {
	r := checkOssecConf(ctx, e)
	c := e.Stack.Config
	if !c.Runs("manager") {
		return r
	}
	path, problem := apiConfigProblem(c.Manager.InstallDir)
	if problem == "" {
		return r
	}
	fix := "fix " + path + " where the error says (it is YAML), then: siemctl services restart manager"
	if r.Status == Crit {
		r.Evidence = append(r.Evidence, problem)
		r.Fix += "; and " + fix
		return r
	}
	return crit("API configuration invalid: "+problem, fix, problem)
}

// apiConfigProblem reads the manager API's configuration under installDir
// (api/configuration/api.yaml) and says what keeps it from loading as YAML settings; "" when it
// loads, or when it is not there or cannot be read (the API then runs on its defaults).
func apiConfigProblem(installDir string) (path, problem string) {
	path = filepath.Join(installDir, "api", "configuration", "api.yaml")
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return path, ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return path, ""
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return path, fmt.Sprintf("%s is not valid YAML: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if _, ok := v.(map[string]any); v != nil && !ok {
		return path, path + " is not a mapping of settings (key: value)"
	}
	return path, ""
}

// checkOssecConf judges ossec.conf.
func checkOssecConf(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	conf := c.Manager.InstallDir + "/etc/ossec.conf"
	fix := "fix " + conf + " at the reported element, then: siemctl services restart manager"
	if mg, err := e.Stack.Manager.Get(); err == nil {
		// Ask directly (no reachability round trip first); on any failure
		// fall back to the control tool, which works with the API down.
		if v, err := mg.ValidateConfig(ctx); err == nil {
			if v.OK {
				return ok("configuration valid (API validation)")
			}
			return crit("configuration invalid: "+firstOr(v.Errors, "see the manager log"), fix, v.Errors...)
		}
	}
	if !c.Runs("manager") {
		return unknown("not checked: the manager API did not validate the configuration and the manager is not on this host (no configuration check tool here)", "see manager.api, or run siemctl health on a manager host")
	}
	if e.Stack.Tools == nil {
		return unknown("not checked: manager API down and no configuration check tool", "see manager.api")
	}
	check := manager.Tools{InstallDir: c.Manager.InstallDir, ControlName: c.Manager.ControlTool, ConfigCheck: c.Manager.ConfigCheck}.ConfigCheckCommand()
	res, err := e.Stack.Tools.ControlCheck(ctx)
	if err != nil {
		return unknown("cannot run the configuration check: "+err.Error(), "run "+check+" by hand (manager.config_check)")
	}
	if res.OK {
		return ok("configuration valid (" + check + ")")
	}
	var ev []string
	for _, p := range res.Problems {
		ev = append(ev, p.String())
	}
	return crit("configuration invalid: "+firstOr(ev, "see the control tool"), fix, ev...)
}

func firstOr(s []string, d string) string {
	if len(s) == 0 {
		return d
	}
	return s[0]
}

func checkAgents(ctx context.Context, e *Env) Result {
	mg, err := e.Stack.Manager.Get()
	if err != nil {
		return noClient("manager", err, false)
	}
	sum, err := mg.AgentsSummary(ctx)
	if err != nil {
		return depFailed(ctx, e, "manager agent summary", err)
	}
	cn := sum.Connection
	summary := fmt.Sprintf("%d agents: %d active, %d disconnected, %d never connected, %d pending", cn.Total, cn.Active, cn.Disconnected, cn.NeverConnected, cn.Pending)
	metrics := map[string]float64{"active": float64(cn.Active), "disconnected": float64(cn.Disconnected), "never_connected": float64(cn.NeverConnected), "pending": float64(cn.Pending), "total": float64(cn.Total)}
	var problems, fixes []string
	info, _ := managerInfo(ctx, e)
	if mv, err := manager.ParseVersion(info.APIVersion); err == nil {
		newer, err := fleet.AgentsNewerThan(ctx, mg, mv, "the manager")
		if err != nil {
			return warn(summary+"; cannot list agent versions: "+errSummary(err), "siemctl agents outdated")
		}
		if !newer.OK() {
			problems = append(problems, newer.Summary)
			fixes = append(fixes, "upgrade the manager first, or reinstall those agents at "+mv.String()+" (siemctl agents outdated)")
		}
	}
	// A few disconnected agents are normal in a fleet (laptops, retired
	// hosts); most of them at once points at the manager or the network.
	connected := cn.Active + cn.Disconnected
	if cn.Disconnected > 0 && cn.Disconnected*2 > connected {
		problems = append(problems, fmt.Sprintf("%d of %d enrolled agents disconnected (more than half: manager or network problem?)", cn.Disconnected, connected))
		fixes = append(fixes, "siemctl agents list --status disconnected")
	}
	r := ok(summary)
	if len(problems) > 0 {
		r = warn(summary+"; "+strings.Join(problems, "; "), strings.Join(fixes, "; "))
	}
	r.Metrics = metrics
	return r
}
