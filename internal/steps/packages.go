package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/rundata"
)

type pkgParams struct {
	Component string `yaml:"component"`
	downgrade bool
}

func (p *pkgParams) Validate() error { return validComponent(p.Component, false) }

func (p *pkgParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	which := "target"
	if p.downgrade {
		which = "previous"
	}
	v := pl.version(which, p.Component)
	argv := "apt-get install -y -q"
	if p.downgrade {
		argv += " --allow-downgrades"
	}
	argv += " -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold " + pl.pkg(p.Component) + "=" + v
	if c := pl.cfg(); c != nil && c.Packages.Manager == "yum" {
		verb := "install"
		if p.downgrade {
			verb = "downgrade"
		}
		argv = "yum " + verb + " -y " + pl.pkg(p.Component) + "-" + v
	}
	lines := []string{}
	if !p.downgrade {
		lines = append(lines, "dpkg-query -W (record the installed versions as previous_versions before installing)")
	}
	return append(lines, argv, "dpkg-query -W "+pl.pkg(p.Component)+" (verify "+v+")")
}

func packageKinds() []Kind {
	mk := func(name string, down bool) Kind {
		return engine.Define(Spec[*pkgParams]{Name: name, Estimate: fixed[*pkgParams](time.Minute),
			New:    func() *pkgParams { return &pkgParams{downgrade: down} },
			Run:    runPackage,
			Skip:   skipPackage,
			Verify: verifyPackage})
	}
	return []Kind{mk("packages.install", false), mk("packages.downgrade", true)}
}

// wanted is the exact version the step installs ("" when there is none).
func wanted(env Env, p *pkgParams) (string, error) {
	m, err := recordedVersions(env, p.downgrade)
	if err != nil {
		return "", err
	}
	return m[p.Component], nil
}

func installedOf(ctx context.Context, d *Deps, comp string) (string, error) {
	pk, err := d.packages()
	if err != nil {
		return "", err
	}
	pkg := d.Config.PackageNames()[comp]
	m, err := pk.Installed(ctx, pkg)
	if err != nil {
		return "", err
	}
	return m[pkg], nil
}

func skipPackage(ctx context.Context, env Env, p *pkgParams) (string, bool, error) {
	d := env.Deps()
	want, err := wanted(env, p)
	if err != nil {
		return "", false, err
	}
	if want == "" {
		if p.downgrade {
			return "no previous version recorded for " + p.Component + " (the upgrade did not change it)", true, nil
		}
		return "no target version for " + p.Component + " (it stays as it is)", true, nil
	}
	inst, err := installedOf(ctx, d, p.Component)
	if err != nil {
		return "", false, err
	}
	if inst == want {
		return fmt.Sprintf("%s already at %s", d.Config.PackageNames()[p.Component], want), true, nil
	}
	return "", false, nil
}

func verifyPackage(ctx context.Context, env Env, p *pkgParams) (bool, error) {
	d := env.Deps()
	want, err := wanted(env, p)
	if err != nil || want == "" {
		return false, err
	}
	inst, err := installedOf(ctx, d, p.Component)
	return inst == want, err
}

// RecordPrevious stores the installed versions of every component as
// previous_versions, keeping components already recorded (a resumed run
// must not record the half-upgraded state as "previous").
func RecordPrevious(ctx context.Context, env Env, d *Deps) (map[string]string, error) {
	prev, err := versions(env, rundata.KeyPreviousVersions)
	if err != nil {
		return nil, err
	}
	missing := false
	for _, c := range Components {
		if _, ok := prev[c]; !ok {
			missing = true
		}
	}
	if !missing {
		return prev, nil
	}
	pk, err := d.packages()
	if err != nil {
		return nil, err
	}
	names := d.Config.PackageNames()
	var pkgs []string
	for _, c := range Components {
		pkgs = append(pkgs, names[c])
	}
	inst, err := pk.Installed(ctx, pkgs...)
	if err != nil {
		return nil, err
	}
	for _, c := range Components {
		if _, ok := prev[c]; !ok {
			prev[c] = inst[names[c]]
		}
	}
	if err := env.Set(rundata.KeyPreviousVersions, prev); err != nil {
		return nil, err
	}
	return prev, nil
}

func runPackage(ctx context.Context, env Env, p *pkgParams) (engine.Outcome, error) {
	d := env.Deps()
	pk, err := d.packages()
	if err != nil {
		return engine.Outcome{}, err
	}
	want, err := wanted(env, p)
	if err != nil {
		return engine.Outcome{}, err
	}
	if want == "" {
		return engine.Outcome{}, fmt.Errorf("no version to install for %s", p.Component)
	}
	pkg := d.Config.PackageNames()[p.Component]
	if !p.downgrade {
		// Before anything is installed: what to go back to.
		if _, err := RecordPrevious(ctx, env, d); err != nil {
			return engine.Outcome{}, fmt.Errorf("record previous versions: %w", err)
		}
	}
	inst, err := installedOf(ctx, d, p.Component)
	if err != nil {
		return engine.Outcome{}, err
	}
	opts := packages.InstallOptions{KeepConfig: true}
	if cmp := pk.Compare(want, inst); inst != "" && cmp < 0 {
		if !p.downgrade {
			return engine.Outcome{}, fmt.Errorf("%s %s is newer than the target %s: no downgrades here (siemctl rollback)", pkg, inst, want)
		}
		opts.AllowDowngrades = true
	}
	err = wait(ctx, env, 2*d.poll(), "the package database lock", func() (bool, error) {
		env.Waiting("%s", strings.Join(pk.InstallCommands(map[string]string{pkg: want}, opts, map[string]string{pkg: inst})[0].Argv, " "))
		err := pk.Install(ctx, map[string]string{pkg: want}, opts)
		if errors.Is(err, packages.ErrLocked) {
			return false, nil // another apt/dpkg (perhaps one of a killed run) still runs
		}
		return err == nil, err
	})
	if err != nil {
		return engine.Outcome{}, err
	}
	got, err := installedOf(ctx, d, p.Component)
	if err != nil {
		return engine.Outcome{}, err
	}
	if got != want {
		return engine.Outcome{}, fmt.Errorf("%s is %s after installing %s", pkg, output.Dash(got), want)
	}
	return engine.Outcome{Message: fmt.Sprintf("%s %s → %s", pkg, output.Dash(inst), got), Data: map[string]any{"from": inst, "to": got}}, nil
}
