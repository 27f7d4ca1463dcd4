// Package versions is the one "versions" verdict of the stack: indexer,
// manager and dashboard installed at the same version (epoch and package
// revision aside; the shipper may differ), each component at the version a
// run wants when it wants one, and the running services reporting what is
// installed (the manager API and the dashboard; an indexer's API reports
// its OpenSearch version, often the "7.10.2" compatibility override, so it
// is shown, never compared; the nodes' real versions are shown against the
// release table, Releases). Installed versions are the component's
// package version as packages.ByComponent reads it.
//
// Doors: the health check "versions" (internal/health) maps a problem to
// CRIT with the verdict's fix, the upgrade gate gate.versions (check
// installed) to no-go; the gate's candidates check uses Differ for the
// versions it would install.
package versions

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/ops/verdict"
	"github.com/siemctl/siemctl/internal/packages"
)

// Core are the components whose versions must be identical (of
// config.Components; the shipper may differ).
var Core = []string{"indexer", "manager", "dashboard"}

// Facts are what Judge reads. Maps are keyed by component.
type Facts struct {
	// Packages names each component's package (config.PackageNames, or
	// HostPackageNames: a component absent here is not judged).
	Packages map[string]string
	// Installed is each component's installed version, "" when its package
	// is not installed (packages.ByComponent).
	Installed map[string]string
	// Want is the exact package version a run wants per component; empty
	// for no expectation (health).
	Want map[string]string
	// ManagerAPI and Dashboard are the versions the running services
	// report, "" when not known (not asked, no answer).
	ManagerAPI, Dashboard string
	// Indexer are the indexer nodes' OpenSearch versions (shown only).
	Indexer []indexer.NodeVersion
}

// Verdict is the judgement, of the one verdict shape (internal/ops/verdict):
// OK, or NoGo with Items saying what is wrong, one phrase each, Summary
// them "; "-joined and Fix what to do about them (one fix per kind of
// problem, "; "-joined).
type Verdict struct {
	verdict.Verdict
	// Version is the core components' common upstream version ("" when
	// they differ or one is not installed).
	Version string
	// Evidence are the facts, one line each.
	Evidence []string
}

// Differ returns the distinct upstream versions of the core components
// that have one in m (component → version), sorted; more than one means
// they are not identical.
func Differ(m map[string]string) []string {
	var ups []string
	for _, c := range Core {
		if v := m[c]; v != "" {
			ups = append(ups, packages.Upstream(v))
		}
	}
	slices.Sort(ups)
	return slices.Compact(ups)
}

// Judge judges the facts.
func Judge(f Facts) Verdict {
	var v Verdict
	var fixes, missing, restart []string
	problem := func(fix, format string, args ...any) {
		v.Items = append(v.Items, fmt.Sprintf(format, args...))
		if !slices.Contains(fixes, fix) {
			fixes = append(fixes, fix)
		}
	}
	byVersion := map[string][]string{}
	for _, c := range config.Components {
		if _, ok := f.Packages[c]; f.Packages != nil && !ok {
			continue // not on this host (health on a distributed host)
		}
		pkg, inst := cmp.Or(f.Packages[c], c), f.Installed[c]
		switch {
		case inst == "" && slices.Contains(Core, c):
			missing = append(missing, pkg)
			v.Evidence = append(v.Evidence, pkg+": not installed")
		case inst == "":
		case slices.Contains(Core, c):
			v.Evidence = append(v.Evidence, pkg+": "+inst)
			up := packages.Upstream(inst)
			byVersion[up] = append(byVersion[up], pkg)
		default:
			v.Evidence = append(v.Evidence, pkg+": "+inst+" (may differ)")
		}
	}
	for _, c := range config.Components {
		if w := f.Want[c]; w != "" && f.Installed[c] != w {
			problem("finish the run (siemctl upgrade resume) or roll it back (siemctl rollback)", "%s is %s, want %s", cmp.Or(f.Packages[c], c), cmp.Or(f.Installed[c], "-"), w)
		}
	}
	if len(missing) > 0 {
		problem("install the missing package(s) at the version of the others", "not installed: %s", strings.Join(missing, ", "))
	}
	if ups := Differ(f.Installed); len(ups) > 1 {
		parts := make([]string, len(ups))
		for i, up := range ups {
			parts[i] = up + ": " + strings.Join(byVersion[up], ",")
		}
		problem("finish the upgrade: siemctl upgrade resume (or siemctl upgrade plan --to <version>)",
			"component versions differ (%s); indexer, manager and dashboard must be identical", strings.Join(parts, "; "))
	} else if len(ups) == 1 && len(missing) == 0 {
		v.Version = ups[0]
	}
	if f.ManagerAPI != "" {
		v.Evidence = append(v.Evidence, "manager API reports "+f.ManagerAPI)
	}
	if f.Dashboard != "" {
		v.Evidence = append(v.Evidence, "dashboard reports "+f.Dashboard)
	}
	if len(f.Indexer) > 0 {
		v.Evidence = append(v.Evidence, "indexer runs "+Nodes(f.Indexer))
	}
	if up := packages.Upstream(f.Installed["indexer"]); up != "" {
		v.Evidence = append(v.Evidence, Known(up, f.Indexer)...)
	}
	// The running services against the packages: only where the packages
	// agree, else the problem above says it all.
	if v.Version != "" {
		if f.ManagerAPI != "" && f.ManagerAPI != v.Version {
			restart = append(restart, "manager")
			v.Items = append(v.Items, fmt.Sprintf("manager API reports %s but the package is %s (not restarted after the upgrade?)", f.ManagerAPI, v.Version))
		}
		if f.Dashboard != "" && f.Dashboard != v.Version {
			restart = append(restart, "dashboard")
			v.Items = append(v.Items, fmt.Sprintf("dashboard reports %s but the package is %s: the dashboard will say \"API version mismatch\"", f.Dashboard, v.Version))
		}
		if len(restart) > 0 {
			fixes = append(fixes, "siemctl services restart "+strings.Join(restart, " "))
		}
	}
	v.Fix = strings.Join(fixes, "; ")
	if len(v.Items) > 0 {
		v.Level, v.Summary = verdict.NoGo, strings.Join(v.Items, "; ")
	}
	return v
}

// Nodes lists the indexer nodes' OpenSearch versions ("node-1 OpenSearch
// 2.11.1, node-2 OpenSearch 2.13.0").
func Nodes(nodes []indexer.NodeVersion) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.Name + " OpenSearch " + n.Version
	}
	return strings.Join(parts, ", ")
}
