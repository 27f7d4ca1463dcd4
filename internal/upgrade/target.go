package upgrade

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/steps"
)

import ()

// Candidate is one component's package as the package manager sees it.
type Candidate struct {
	Component string   `json:"component"`
	Package   string   `json:"package"`
	Installed string   `json:"installed"`
	Available []string `json:"available"`
	// Target is the exact version chosen for the wanted one ("" if none).
	Target string `json:"target"`
}

// ErrNoCandidate means a component has no installable version matching the
// wanted one.
var ErrNoCandidate = errors.New("no installable version")

// ErrTargetForm: a target version that is neither an upstream version nor
// an exact package version.
var ErrTargetForm = errors.New("invalid target version")

// targetRE is an upstream version (4.10.0) with an optional package
// revision (4.10.0-1, 4.10.0-1.el9).
var targetRE = regexp.MustCompile(`^[0-9]{1,6}\.[0-9]{1,6}\.[0-9]{1,6}(-[0-9A-Za-z][0-9A-Za-z.+~_]*)?$`)

// CheckTarget reports whether want has the form of a target version.
func CheckTarget(want string) error {
	if !targetRE.MatchString(want) {
		return fmt.Errorf("%w %q: give the upstream version (e.g. 4.10.0) or the exact package version (e.g. 4.10.0-1)", ErrTargetForm, want)
	}
	return nil
}

// ResolveTarget finds, for every component, the exact package version that
// matches want: want itself when a repository offers it ("4.10.0-1"), else
// the newest available version whose upstream part is want ("4.10.0" →
// "4.10.0-2"). Components without a match get Target "". Hosts whose
// package manager cannot list candidates (yum) need the exact version.
func ResolveTarget(ctx context.Context, pk steps.PackagesAPI, names map[string]string, want string) ([]Candidate, error) {
	if err := CheckTarget(want); err != nil {
		return nil, err
	}
	comps := slices.Clone(steps.Components)
	inst, err := packages.ByComponent(ctx, pk, names)
	if err != nil {
		return nil, err
	}
	// The package manager is asked for every package at once (each ask is a process: in sequence
	// they cost a loaded host seconds), all within ctx.
	type answer struct {
		pol packages.Policy
		err error
	}
	answers := make([]answer, len(comps))
	var wg sync.WaitGroup
	for i, c := range comps {
		wg.Go(func() {
			pol, err := pk.Candidates(ctx, names[c])
			answers[i] = answer{pol, err}
		})
	}
	wg.Wait()
	out := make([]Candidate, 0, len(comps))
	for i, c := range comps {
		cand := Candidate{Component: c, Package: names[c], Installed: inst[c], Available: []string{}}
		pol, err := answers[i].pol, answers[i].err
		switch {
		case errors.Is(err, packages.ErrUnsupported):
			if !strings.Contains(want, "-") {
				return nil, fmt.Errorf("%s cannot list candidate versions: give the exact package version (e.g. %s-1)", pk.Kind(), want)
			}
			cand.Target = want
		case errors.Is(err, packages.ErrNotFound):
			// unknown to the package manager: no candidates
		case err != nil:
			return nil, err
		default:
			cand.Available = append(cand.Available, pol.Available...)
			cand.Target = pickVersion(pk, pol.Available, want)
		}
		out = append(out, cand)
	}
	return out, nil
}

func pickVersion(pk steps.PackagesAPI, avail []string, want string) string {
	best := ""
	for _, v := range avail {
		if v == want {
			return v
		}
		if packages.Upstream(v) == want && (best == "" || pk.Compare(v, best) > 0) {
			best = v
		}
	}
	return best
}

// TargetMap returns component → target version of the candidates that have one.
func TargetMap(cands []Candidate) map[string]string {
	m := map[string]string{}
	for _, c := range cands {
		if c.Target != "" {
			m[c.Component] = c.Target
		}
	}
	return m
}
