package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	stackversions "github.com/siemctl/siemctl/internal/ops/versions"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/rundata"
)

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
	names := d.Config.PackageNames()
	if len(want) == 0 && !previous && p.Check == "candidates" {
		// No component resolved to the target: it is not in this host's repositories.
		return engine.Outcome{}, targetUnavailable(ctx, env, d, pk, names)
	}
	if len(want) == 0 {
		key := versionsKey(previous)
		return engine.Outcome{}, fmt.Errorf("the run has no %s (run data %s)", strings.ReplaceAll(key, "_", " "), key)
	}
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
	migration := ""                   // a target the release table calls a migration
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
			if _, err := stackversions.CheckUpgradePath(pk, inst[c], v); err != nil {
				if errors.Is(err, stackversions.ErrMigration) {
					migration = v
				}
				problems = append(problems, fmt.Sprintf("%s: %v", c, err))
			}
		}
	}
	if migration != "" {
		// the release table's word on the path (the plan's), once for the stack; each component
		// names its own jump after it
		problems = append([]string{stackversions.MigrationNoGo(migration)}, problems...)
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

// targetUnavailable is the no-go of a target no package of this host resolves to: each package's
// available versions, and the fix.
func targetUnavailable(ctx context.Context, env Env, d *Deps, pk PackagesAPI, names map[string]string) error {
	var target string
	_, _ = env.Get(rundata.KeyTarget, &target)
	var avail []string
	for _, c := range d.Config.HostComponents() {
		if names[c] == "" {
			continue
		}
		pol, err := pk.Candidates(ctx, names[c])
		if err != nil {
			avail = append(avail, fmt.Sprintf("%s: %v", names[c], err))
			continue
		}
		avail = append(avail, fmt.Sprintf("%s available: %s", names[c], strings.Join(orNone(pol.Available), ", ")))
	}
	return engine.NoGo("target %s is not installable on this host: %s (choose an available version, or add the repository that carries %s and refresh the package index)",
		output.Dash(target), strings.Join(avail, "; "), output.Dash(target))
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
			return engine.Outcome{}, notAnswering(ctx, d, "manager", "manager API", err)
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
		return engine.Outcome{}, notAnswering(ctx, d, "manager", "manager API", err)
	}
	if !newer.OK() {
		return engine.Outcome{}, engine.NoGo("%s; agents must not be newer than the manager", newer.Summary)
	}
	return engine.Outcome{Message: newer.Summary}, nil
}
