package steps

// shipper.module: the Filebeat module of the manager's alerts follows the
// manager's version (the table and the installation: internal/shipper).

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/shipper"
)

type moduleParams struct {
	versionParam `yaml:",inline"`
}

func (p *moduleParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	v := packages.Upstream(pl.version(p.which(), "manager"))
	src, dir := "<shipper.module_source>", "<shipper.home_dir>/module"
	if c := pl.cfg(); c != nil {
		src, dir = c.Shipper.ModuleSource, filepath.Join(c.Shipper.HomeDir, "module")
	}
	return []string{"when the Filebeat module of manager " + v + " differs from the other version's (" + moduleTable() + ")",
		"fetch " + src + " ({module} = that module), unpack it (regular files and directories only) next to " + dir + " and swap it in"}
}

func moduleTable() string {
	var parts []string
	for _, m := range shipper.FilebeatModules {
		parts = append(parts, m.From+"+: "+m.Tarball)
	}
	return strings.Join(parts, ", ")
}

func moduleKind() Kind {
	return engine.Define(Spec[*moduleParams]{Name: "shipper.module",
		New: func() *moduleParams { return &moduleParams{} }, Run: runModule,
		Skip: func(_ context.Context, env Env, p *moduleParams) (string, bool, error) {
			_, reason, err := moduleChange(env, p)
			if err != nil || reason == "" {
				return "", false, err
			}
			return reason, true, nil
		}})
}

// moduleChange returns the module to install for p's version, or why
// nothing is installed.
func moduleChange(env Env, p *moduleParams) (shipper.FilebeatModule, string, error) {
	d := env.Deps()
	c := d.Config.Shipper
	if c.ModuleSource == "" {
		return shipper.FilebeatModule{}, "shipper.module_source is not set: the shipper's module is not managed here", nil
	}
	if c.HomeDir == "" {
		return shipper.FilebeatModule{}, "shipper.home_dir is not set: there is no module directory to update", nil
	}
	this, err := recordedVersions(env, p.previous())
	if err != nil {
		return shipper.FilebeatModule{}, "", err
	}
	other, err := recordedVersions(env, !p.previous())
	if err != nil {
		return shipper.FilebeatModule{}, "", err
	}
	v, o := packages.Upstream(this["manager"]), packages.Upstream(other["manager"])
	if v == "" || o == "" {
		return shipper.FilebeatModule{}, "", fmt.Errorf("no previous and target manager versions recorded: cannot pick the Filebeat module")
	}
	want, ok := shipper.ModuleFor(v)
	have, ok2 := shipper.ModuleFor(o)
	switch {
	case !ok || !ok2:
		return shipper.FilebeatModule{}, fmt.Sprintf("no Filebeat module known for manager %s or %s (known from %s): update %s by hand as Wazuh's upgrade guide says",
			o, v, shipper.FilebeatModules[0].From, filepath.Join(c.HomeDir, "module")), nil
	case want.Tarball == have.Tarball:
		return shipper.FilebeatModule{}, fmt.Sprintf("the Filebeat module is %s for both manager %s and %s: unchanged", want.Tarball, o, v), nil
	}
	return want, "", nil
}

func runModule(ctx context.Context, env Env, p *moduleParams) (engine.Outcome, error) {
	d := env.Deps()
	m, reason, err := moduleChange(env, p)
	if err != nil {
		return engine.Outcome{}, err
	}
	if reason != "" {
		return engine.Outcome{Message: reason}, nil
	}
	src := strings.ReplaceAll(d.Config.Shipper.ModuleSource, "{module}", m.Tarball)
	body, err := fetchCapped(ctx, d, src, shipper.MaxModule)
	if err != nil {
		return engine.Outcome{}, err
	}
	dir := filepath.Join(d.Config.Shipper.HomeDir, "module")
	n, err := shipper.InstallModule(ctx, body, dir, m.Dir)
	if err != nil {
		return engine.Outcome{}, fmt.Errorf("module %s from %s: %w", m.Tarball, src, err)
	}
	return engine.Outcome{Message: fmt.Sprintf("Filebeat module %s installed in %s (%d files)", m.Tarball, filepath.Join(dir, m.Dir), n)}, nil
}
