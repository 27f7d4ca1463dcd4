package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/cluster"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/services"
	stackversions "github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/upgrade/rundata"
)

// --- gate.cluster_health ----------------------------------------------------

type healthParams struct {
	Status                string `yaml:"status"`
	WaitForNoRelocating   bool   `yaml:"wait_for_no_relocating"`
	WaitForNoInitializing bool   `yaml:"wait_for_no_initializing"`
	// timeout_per_primary: a node bringing its primaries back after a start needs longer
	primariesAllowance `yaml:",inline"`
}

func (p *healthParams) Describe(pc engine.PlanContext) []string {
	q := "wait_for_status=" + p.Status
	if p.WaitForNoRelocating {
		q += "&wait_for_no_relocating_shards=true"
	}
	if p.WaitForNoInitializing {
		q += "&wait_for_no_initializing_shards=true"
	}
	return p.describe([]string{"GET /_cluster/health?" + q + "&timeout=<≤30s> (server-side wait; 408 = not yet); red: GET /_cat/shards + GET /_cluster/allocation/explain of an unassigned primary"})
}

func (p *healthParams) Validate() error {
	if p.Status != "yellow" && p.Status != "green" {
		return fmt.Errorf("status %q: want yellow or green", p.Status)
	}
	return p.validate()
}

// serverWait is the longest server-side wait per request.
const serverWait = 30 * time.Second

func waitBudget(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return serverWait
	}
	w := time.Until(dl) - 2*time.Second
	return min(max(w, time.Second), serverWait)
}

// notAnswering turns a transport-level failure of a component into "not
// yet" (it may be starting); other errors stay errors.
func notAnswering(what string, err error) error {
	if cluster.NotAnswering(err) {
		return engine.Pending("%s not answering: %v", what, err)
	}
	return err
}

func runClusterHealth(ctx context.Context, env Env, p *healthParams) (engine.Outcome, error) {
	d, ix, err := indexerOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	// A quick look first: red is judged at once, not after a server-side wait.
	h, err := ix.Health(ctx, indexer.HealthRequest{})
	if err != nil {
		return engine.Outcome{}, notAnswering("indexer", err)
	}
	if h.Status == "red" {
		return engine.Outcome{}, judgeRed(ctx, ix, h)
	}
	env.Waiting("cluster %s, waiting server-side for %s", h.Status, p.Status)
	stop := watchRecovery(ctx, env, d, "recovery", "", true, nil)
	h, err = ix.Health(ctx, indexer.HealthRequest{WaitForStatus: p.Status, WaitForNoRelocatingShards: p.WaitForNoRelocating,
		WaitForNoInitializingShards: p.WaitForNoInitializing, Timeout: waitBudget(ctx)})
	stop()
	if err != nil {
		return engine.Outcome{}, notAnswering("indexer", err)
	}
	if h.Status == "red" {
		return engine.Outcome{}, judgeRed(ctx, ix, h)
	}
	if h.TimedOut {
		return engine.Outcome{}, engine.Pending("cluster %s (want %s): %d initializing, %d relocating, %d unassigned shards",
			h.Status, p.Status, h.InitializingShards, h.RelocatingShards, h.UnassignedShards)
	}
	msg := fmt.Sprintf("cluster %s, %d nodes, %d active shards", h.Status, h.NumberOfNodes, h.ActiveShards)
	if h.Status == "yellow" && h.UnassignedShards > 0 {
		msg += fmt.Sprintf(", %d unassigned replica shards", h.UnassignedShards)
		if v := cluster.Status(h); v.Level == cluster.OK {
			msg += " (a single node cannot hold replicas)"
		}
	}
	return engine.Outcome{Message: msg, Data: map[string]any{"status": h.Status}}, nil
}

// judgeRed: a red cluster whose unassigned primaries cannot be allocated is
// a no-go (with the reason); one still recovering is "not yet".
func judgeRed(ctx context.Context, ix IndexerAPI, h indexer.Health) error {
	v := cluster.Red(ctx, ix, h)
	if v.Level == cluster.NoGo {
		return engine.NoGo("%s", v.Summary)
	}
	return engine.Pending("%s", v.Summary)
}

// --- gate.disk ----------------------------------------------------------------

type diskParams struct {
	MinFreePercent *int `yaml:"min_free_percent"`
	NogoPercent    *int `yaml:"nogo_percent"`
}

func (p *diskParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	return []string{fmt.Sprintf("statfs %s: at least %s%% free, no-go above %s%% used", pl.dataDir(), thresholdPct(pl, p.MinFreePercent, "upgrade_min_free_percent"), thresholdPct(pl, p.NogoPercent, "disk_nogo_percent"))}
}

func thresholdPct(pl *Planning, v *int, key string) string {
	if v != nil {
		return strconv.Itoa(*v)
	}
	if c := pl.cfg(); c != nil {
		switch key {
		case "upgrade_min_free_percent":
			return strconv.Itoa(c.Thresholds.UpgradeMinFreePercent)
		case "disk_nogo_percent":
			return strconv.Itoa(c.Thresholds.DiskNogoPercent)
		}
	}
	return "<thresholds." + key + ">"
}

func (p *diskParams) Validate() error {
	for name, v := range map[string]*int{"min_free_percent": p.MinFreePercent, "nogo_percent": p.NogoPercent} {
		if v != nil && (*v < 0 || *v > 100) {
			return fmt.Errorf("%s %d is not a percentage", name, *v)
		}
	}
	return nil
}

func runDisk(_ context.Context, env Env, p *diskParams) (engine.Outcome, error) {
	d := env.Deps()
	if d.Disk == nil || d.Config == nil {
		return engine.Outcome{}, errors.New("disk usage is not available")
	}
	minFree, nogo := d.Config.Thresholds.UpgradeMinFreePercent, d.Config.Thresholds.DiskNogoPercent
	if p.MinFreePercent != nil {
		minFree = *p.MinFreePercent
	}
	if p.NogoPercent != nil {
		nogo = *p.NogoPercent
	}
	path := d.Config.Indexer.DataDir
	u, err := d.Disk(path)
	if err != nil {
		return engine.Outcome{}, err
	}
	free := 100 - u.UsedPercent
	msg := fmt.Sprintf("%s: %.1f%% used, %.1f%% free (%s of %s)", path, u.UsedPercent, free, output.Bytes(int64(u.FreeBytes)), output.Bytes(int64(u.TotalBytes)))
	v := cluster.Disk(cluster.DiskUse{UsedPercent: u.UsedPercent}, cluster.DiskLimits{Warn: d.Config.Thresholds.DiskWarnPercent, NoGo: nogo, MinFree: minFree})
	if v.Level == cluster.NoGo {
		return engine.Outcome{}, engine.NoGo("%s: %s; %s", msg, v.Summary, v.Fix)
	}
	return engine.Outcome{Message: msg}, nil
}

// --- gate.versions --------------------------------------------------------------

type versionsParams struct {
	Check        string `yaml:"check"`
	versionParam `yaml:",inline"`
}

func (p *versionsParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	var lines []string
	var pkgs []string
	for _, c := range Components {
		pkgs = append(pkgs, pl.pkg(c)+"="+pl.version(p.which(), c))
	}
	if p.Check == "candidates" {
		list := "apt-cache policy "
		if c := pl.cfg(); c != nil && c.Packages.Manager == "yum" {
			list = "yum --showduplicates list "
		}
		for _, c := range Components {
			lines = append(lines, list+pl.pkg(c))
		}
		lines = append(lines, "want installable: "+strings.Join(pkgs, " ")+"; indexer = manager = dashboard; no downgrade, no major jump")
		return lines
	}
	return []string{"dpkg-query -W " + strings.Join(pkgsOnly(pl), " ") + " (want " + strings.Join(pkgs, " ") + ")", "manager GET / (api_version), indexer GET /_nodes (OpenSearch version, shown)"}
}

func pkgsOnly(pl *Planning) []string {
	var out []string
	for _, c := range Components {
		out = append(out, pl.pkg(c))
	}
	return out
}

func (p *versionsParams) Validate() error {
	if p.Check != "candidates" && p.Check != "installed" {
		return fmt.Errorf("check %q: want candidates or installed", p.Check)
	}
	return p.versionParam.Validate()
}

func runVersions(ctx context.Context, env Env, p *versionsParams) (engine.Outcome, error) {
	d := env.Deps()
	pk, err := d.packages()
	if err != nil {
		return engine.Outcome{}, err
	}
	previous := p.previous()
	want, err := recordedVersions(env, previous)
	if err != nil {
		return engine.Outcome{}, err
	}
	if len(want) == 0 {
		key := versionsKey(previous)
		return engine.Outcome{}, fmt.Errorf("the run has no %s (run data %s)", strings.ReplaceAll(key, "_", " "), key)
	}
	names := d.Config.PackageNames()
	inst, err := packages.ByComponent(ctx, pk, names)
	if err != nil {
		return engine.Outcome{}, err
	}
	if p.Check == "candidates" {
		return checkCandidates(ctx, d, pk, names, inst, want, p.which())
	}
	return checkInstalled(ctx, d, names, inst, want)
}

func checkCandidates(ctx context.Context, d *Deps, pk PackagesAPI, names, inst, want map[string]string, which string) (engine.Outcome, error) {
	var problems, notes []string
	here := d.Config.HostComponents() // a distributed host judges only what it runs
	for _, c := range here {
		v := want[c]
		if v == "" {
			if slices.Contains(identical, c) {
				problems = append(problems, fmt.Sprintf("%s: no %s version", c, which))
			} else {
				notes = append(notes, c+" stays at "+output.Dash(inst[c]))
			}
			continue
		}
		if inst[c] == v {
			notes = append(notes, fmt.Sprintf("%s already at %s", c, v))
			continue
		}
		pol, err := pk.Candidates(ctx, names[c])
		switch {
		case errors.Is(err, packages.ErrUnsupported):
			// never a silent pass: what cannot be checked is a no-go
			problems = append(problems, fmt.Sprintf("%s %s: installability unknown: %v: the upgrade does not go ahead on a version it cannot see in a repository", names[c], v, err))
			continue
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", c, err))
			continue
		case !pol.Has(v):
			problems = append(problems, fmt.Sprintf("%s %s is not installable (available: %s)", names[c], v, strings.Join(orNone(pol.Available), ", ")))
			continue
		}
		if which == "target" {
			if _, err := CheckUpgradePath(pk, inst[c], v); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", c, err))
			}
		}
	}
	if vs := stackversions.Differ(want); len(vs) > 1 {
		problems = append(problems, "indexer, manager and dashboard versions differ: "+strings.Join(vs, ", "))
	}
	if which == "target" {
		same, core := 0, 0
		for _, c := range identical {
			if !slices.Contains(here, c) {
				continue
			}
			core++
			if inst[c] == want[c] {
				same++
			}
		}
		if same == core && (!slices.Contains(here, "shipper") || inst["shipper"] == want["shipper"] || want["shipper"] == "") {
			problems = append(problems, "every component is already at the target version; nothing to upgrade")
		}
	}
	summary := versionLine(inst, want)
	if len(problems) > 0 {
		return engine.Outcome{}, engine.NoGo("%s; %s", strings.Join(problems, "; "), summary)
	}
	msg := summary
	if len(notes) > 0 {
		msg += "; " + strings.Join(notes, "; ")
	}
	return engine.Outcome{Message: msg}, nil
}

func versionLine(inst, want map[string]string) string {
	var parts []string
	for _, c := range Components {
		if want[c] == "" || want[c] == inst[c] {
			parts = append(parts, fmt.Sprintf("%s %s", c, output.Dash(inst[c])))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s → %s", c, output.Dash(inst[c]), want[c]))
	}
	return strings.Join(parts, ", ")
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

func checkInstalled(ctx context.Context, d *Deps, names, inst, want map[string]string) (engine.Outcome, error) {
	f := stackversions.Facts{Packages: names, Installed: inst, Want: want}
	if mgr, err := d.manager(); err == nil {
		info, err := mgr.Info(ctx)
		if err != nil {
			return engine.Outcome{}, notAnswering("manager API", err)
		}
		f.ManagerAPI = info.APIVersion
	}
	if ix, err := d.indexer(); err == nil {
		f.Indexer, _ = ix.NodesVersions(ctx)
	}
	msg := versionLine(inst, map[string]string{})
	if f.ManagerAPI != "" {
		msg += "; manager API " + f.ManagerAPI
	}
	if len(f.Indexer) > 0 {
		msg += "; " + stackversions.Nodes(f.Indexer)
	}
	if v := stackversions.Judge(f); !v.OK() {
		return engine.Outcome{}, engine.NoGo("%s (%s)", v.Summary, msg)
	}
	return engine.Outcome{Message: msg}, nil
}

// --- gate.agents ------------------------------------------------------------------

func runAgents(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	mgr, err := d.manager()
	if err != nil {
		return engine.Outcome{}, err
	}
	var target string
	if _, err := env.Get(rundata.KeyTarget, &target); err != nil {
		return engine.Outcome{}, err
	}
	tv, err := manager.ParseVersion(target)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("target version: %w", err)
	}
	newer, err := fleet.AgentsNewerThan(ctx, mgr, tv, "the target")
	if err != nil {
		return engine.Outcome{}, notAnswering("manager API", err)
	}
	if !newer.OK() {
		return engine.Outcome{}, engine.NoGo("%s; agents must not be newer than the manager", newer.Summary)
	}
	return engine.Outcome{Message: newer.Summary}, nil
}

// --- gate.settings_clean ------------------------------------------------------------

func runSettingsClean(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	_, ix, err := indexerOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	s, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, notAnswering("indexer", err)
	}
	if v := cluster.Archived(s); v.Level != cluster.OK {
		return engine.Outcome{}, engine.NoGo("%s; %s", v.Summary, v.Fix)
	}
	return engine.Outcome{Message: "no archived.* settings"}, nil
}

// --- gate.templates -------------------------------------------------------------------

func runTemplates(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d, ix, err := indexerOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	index := d.Config.Indexer.AlertsIndexPrefix + d.now().UTC().Format("2006.01.02")
	sim, err := ix.SimulateIndex(ctx, index)
	if err != nil {
		return engine.Outcome{}, notAnswering("indexer", err)
	}
	name := d.Config.Shipper.TemplateName
	v := cluster.Shadowing(sim, name, index)
	switch {
	case v.Level != cluster.OK:
		return engine.Outcome{}, engine.NoGo("%s; %s", v.Summary, v.Fix)
	case !slices.Contains(sim.Applied, name):
		return engine.Outcome{Message: v.Summary + "; the upgrade loads it"}, nil
	}
	return engine.Outcome{Message: v.Summary}, nil
}

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
		return engine.Outcome{}, notAnswering("manager API", err)
	}
	st, err := mgr.ManagerStatus(ctx)
	if err != nil {
		return engine.Outcome{}, notAnswering("manager API", err)
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
		return engine.Outcome{}, engine.Pending("dashboard not answering: %v", err)
	}
	if code != 200 && code != 302 {
		return engine.Outcome{}, engine.Pending("dashboard GET / answered %d", code)
	}
	return engine.Outcome{Message: fmt.Sprintf("dashboard GET / %d", code)}, nil
}

// --- gate.units_active ---------------------------------------------------------------------

type unitsActiveParams struct {
	componentsParam `yaml:",inline"`
}

func (p *unitsActiveParams) comps() []string { return p.or(Components) }

func (p *unitsActiveParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	var us []string
	for _, c := range p.comps() {
		us = append(us, pl.unit(c))
	}
	return []string{"systemd: ActiveState of " + strings.Join(us, ", ") + " is active"}
}

func (p *unitsActiveParams) Validate() error { return p.validate(Components) }

func runUnitsActive(ctx context.Context, env Env, p *unitsActiveParams) (engine.Outcome, error) {
	d := env.Deps()
	bad, err := inactiveUnits(ctx, d, p.comps())
	if err != nil {
		return engine.Outcome{}, err
	}
	if len(bad) > 0 {
		return engine.Outcome{}, engine.Pending("not active: %s", strings.Join(bad, ", "))
	}
	return engine.Outcome{Message: fmt.Sprintf("%d units active", len(p.comps()))}, nil
}

// inactiveUnits describes the units of comps that are not active (the
// services "units inactive" verdict).
func inactiveUnits(ctx context.Context, d *Deps, comps []string) ([]string, error) {
	u, err := d.units(ctx)
	if err != nil {
		return nil, err
	}
	cs := make([]services.Component, len(comps))
	for i, c := range comps {
		cs[i] = services.Component{Name: c, Unit: d.Config.Units()[c]}
	}
	sts, err := (&services.Runner{Units: u}).Status(ctx, cs)
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, s := range services.Inactive(sts) {
		bad = append(bad, s.Describe())
	}
	return bad, nil
}

// --- gate.ports ------------------------------------------------------------------------------

func runPorts(ctx context.Context, env Env, p *noParams) (engine.Outcome, error) {
	d := env.Deps()
	if d.Ports == nil {
		return engine.Outcome{}, errors.New("port listing is not available")
	}
	have, err := d.Ports(ctx)
	if err != nil {
		return engine.Outcome{}, err
	}
	if d.Config == nil {
		return engine.Outcome{}, errors.New("no configuration: the stack's ports are not known")
	}
	want, remote := hostfacts.ExpectedOf(d.Config)
	v := hostfacts.JudgePorts(want, remote, have)
	if !v.OK() {
		return engine.Outcome{}, engine.Pending("%s", v.Summary)
	}
	// who holds them: the port-owner verdict health's ports check gives
	if d.Units != nil {
		if u, err := d.Units(ctx); err == nil {
			um := d.Config.Units()
			_ = v.Owners(ctx, portHolders, func(ctx context.Context, c string) ([]int, bool) {
				if um[c] == "" {
					return nil, false
				}
				ps, err := u.Processes(ctx, um[c])
				return ps, err == nil
			})
		}
	}
	if foreign := v.Foreign(); len(foreign) > 0 {
		fs := make([]string, len(foreign))
		for i, p := range foreign {
			fs[i] = fmt.Sprintf("%s held by %s, not its unit's (stop it or move it to another port, then siemctl services restart %s)", p.ExpectedPort, p.Holder.Describe(), p.Component())
		}
		return engine.Outcome{}, engine.Pending("%s", strings.Join(fs, "; "))
	}
	return engine.Outcome{Message: v.Summary}, nil
}

// portHolders names who listens on TCP ports of this host (tests replace it).
var portHolders = hostfacts.HostHolders

// --- gate.no_trace -----------------------------------------------------------------------------

func runNoTrace(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	var left []string
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	s, err := ix.Settings(ctx, false)
	if err != nil {
		return engine.Outcome{}, notAnswering("indexer", err)
	}
	left = append(left, cluster.Leftovers(s, cluster.LeftoverOptions{}).Items...)
	bad, err := inactiveUnits(ctx, d, d.Config.HostComponents())
	if err != nil {
		return engine.Outcome{}, err
	}
	for _, b := range bad {
		left = append(left, "unit "+b)
	}
	if len(bad) == 0 && d.Config.Runs("shipper") {
		if sh, err := d.shipper(); err == nil {
			rep, err := sh.TestOutput(ctx)
			switch {
			case err != nil:
				left = append(left, "shipper test output: "+err.Error())
			case !rep.OK:
				left = append(left, "shipper cannot talk to the indexer")
			}
		}
	}
	if len(left) > 0 {
		return engine.Outcome{}, engine.Pending("left behind: %s", strings.Join(left, "; "))
	}
	msg := "allocation all, no transient watermark override, every unit active"
	if d.Config.Runs("shipper") {
		msg += ", shipper talks to the indexer"
	}
	return engine.Outcome{Message: msg}, nil
}

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
