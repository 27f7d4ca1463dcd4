package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/packages"
)

// --- gate.manager_api --------------------------------------------------------------------

// managerAPIParams: with a version, the API must report it (empty: any).
type managerAPIParams struct {
	versionParam `yaml:",inline"`
}

func (p *managerAPIParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	l := "manager GET /manager/status (the five basic daemons running; 1017 means wait while they restart, no-go when one is failed or stopped)"
	if p.Version != "" {
		return []string{"manager POST /security/user/authenticate; GET / (api_version = " + packages.Upstream(pl.version(p.Version, "manager")) + ")", l}
	}
	return []string{"manager POST /security/user/authenticate; GET /", l}
}

func runManagerAPI(ctx context.Context, env Env, p *managerAPIParams) (engine.Outcome, error) {
	d := env.Deps()
	mgr, err := d.manager()
	if err != nil {
		return engine.Outcome{}, err
	}
	info, err := mgr.Info(ctx)
	if err != nil {
		if named, ok := manager.NotReadyError(err); ok {
			// a failed or stopped daemon does not come back by polling
			if down := named.Down(); len(down) > 0 {
				return engine.Outcome{}, engine.NoGo("manager daemon(s) down (1017): %s; see %s", strings.Join(down, ", "), manager.DaemonsDownFix)
			}
			var nr []string
			for _, n := range named.Names() {
				nr = append(nr, n+" ("+named[n]+")")
			}
			return engine.Outcome{}, engine.Pending("manager daemons not ready (1017): %s", strings.Join(nr, ", "))
		}
		return engine.Outcome{}, notAnswering(ctx, d, "manager", "manager API", err)
	}
	st, err := mgr.ManagerStatus(ctx)
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "manager", "manager API", err)
	}
	if down := st.Down(); len(down) > 0 {
		return engine.Outcome{}, engine.NoGo("manager daemon(s) down: %s; see %s", strings.Join(down, ", "), manager.DaemonsDownFix)
	}
	if nr := st.NotReady(); len(nr) > 0 {
		return engine.Outcome{}, engine.Pending("manager daemons not ready: %s", strings.Join(nr, ", "))
	}
	if p.Version != "" {
		want, err := recordedVersions(env, p.previous())
		if err != nil {
			return engine.Outcome{}, err
		}
		if w := packages.Upstream(want["manager"]); w != "" && info.APIVersion != w {
			return engine.Outcome{}, engine.NoGo("manager API reports version %s, want %s", info.APIVersion, w)
		}
	}
	return engine.Outcome{Message: fmt.Sprintf("manager API %s, daemons ready", info.APIVersion)}, nil
}

// --- gate.dashboard ------------------------------------------------------------------------

func runDashboard(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	if d.Dashboard == nil {
		return engine.Outcome{}, errors.New("dashboard probe is not configured")
	}
	code, err := d.Dashboard(ctx)
	if err != nil {
		return engine.Outcome{}, unanswered(ctx, d, "dashboard", "dashboard", err)
	}
	if code != 200 && code != 302 {
		return engine.Outcome{}, engine.Pending("dashboard GET / answered %d", code)
	}
	return engine.Outcome{Message: fmt.Sprintf("dashboard GET / %d", code)}, nil
}
