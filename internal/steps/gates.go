package steps

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
)

// gateKinds are the read-only gate.* kinds; each lives in gates_<area>.go (cluster,
// indexer, disk, versions, services, host, notrace).
func gateKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*healthParams]{Name: "gate.cluster_health", Estimate: fixed[*healthParams](5 * time.Second), ReadOnly: true,
			New: func() *healthParams { return &healthParams{} }, Run: runClusterHealth,
			Budget: func(ctx context.Context, env Env, p *healthParams) (time.Duration, string, error) {
				return p.budget(ctx, env, false)
			}}),
		engine.Define(Spec[*diskParams]{Name: "gate.disk", ReadOnly: true,
			New: func() *diskParams { return &diskParams{} }, Run: runDisk}),
		engine.Define(Spec[*versionsParams]{Name: "gate.versions", ReadOnly: true,
			New: func() *versionsParams { return &versionsParams{} }, Run: runVersions}),
		engine.Define(Spec[*noParams]{Name: "gate.agents", ReadOnly: true, Run: runAgents,
			New: simple(func(*Planning) []string {
				return []string{"manager GET /agents?select=id,version,name (paged): no agent newer than the target"}
			})}),
		engine.Define(Spec[*noParams]{Name: "gate.settings_clean", ReadOnly: true, Run: runSettingsClean,
			New: simple(func(*Planning) []string {
				return []string{"GET /_cluster/settings?flat_settings=true: no archived.* keys"}
			})}),
		engine.Define(Spec[*noParams]{Name: "gate.templates", ReadOnly: true, Run: runTemplates,
			New: simple(func(pl *Planning) []string {
				name, prefix := "<shipper.template_name>", "<alerts prefix>"
				if c := pl.cfg(); c != nil {
					name, prefix = c.Shipper.TemplateName, c.Indexer.AlertsIndexPrefix
				}
				return []string{"POST /_index_template/_simulate_index/" + prefix + "<today>; GET /_index_template, /_template: " + name + " not shadowed"}
			})}),
		engine.Define(Spec[*managerAPIParams]{Name: "gate.manager_api", Estimate: fixed[*managerAPIParams](10 * time.Second), ReadOnly: true,
			New: func() *managerAPIParams { return &managerAPIParams{} }, Run: runManagerAPI}),
		engine.Define(Spec[*noParams]{Name: "gate.dashboard", Estimate: fixed[*noParams](5 * time.Second), ReadOnly: true, Run: runDashboard,
			New: simple(func(pl *Planning) []string {
				u := "<dashboard.url>"
				if c := pl.cfg(); c != nil {
					u = c.Dashboard.URL
				}
				return []string{"GET " + strings.TrimRight(u, "/") + "/ answers 200 or 302"}
			})}),
		engine.Define(Spec[*unitsActiveParams]{Name: "gate.units_active", Estimate: fixed[*unitsActiveParams](2 * time.Second), ReadOnly: true,
			New: func() *unitsActiveParams { return &unitsActiveParams{} }, Run: runUnitsActive}),
		engine.Define(Spec[*noParams]{Name: "gate.ports", Estimate: fixed[*noParams](2 * time.Second), ReadOnly: true, Run: runPorts,
			New: simple(func(pl *Planning) []string {
				var ps []string
				if c := pl.cfg(); c != nil {
					want, _ := hostfacts.ExpectedOf(c)
					for _, p := range want {
						ps = append(ps, strconv.Itoa(p.Port))
					}
				}
				if len(ps) == 0 {
					return []string{"/proc/net/tcp{,6}: the stack's ports listening"}
				}
				return []string{"/proc/net/tcp{,6}: listening on " + strings.Join(ps, ", ")}
			})}),
		engine.Define(Spec[*noParams]{Name: "gate.probe", Estimate: fixed[*noParams](30 * time.Second), ReadOnly: true, Run: runProbe,
			New: simple(describeProbe)}),
		engine.Define(Spec[*noParams]{Name: "gate.no_trace", ReadOnly: true, Run: runNoTrace,
			New: simple(func(*Planning) []string {
				return []string{"GET /_cluster/settings: allocation.enable all, no transient disk watermark override",
					"systemd: every unit active", "shipper test output: talks to the indexer"}
			})}),
	}
}
