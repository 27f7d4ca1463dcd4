package steps_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
)

// fakeYum answers rpm -q and yum --showduplicates list as the real tools
// print them, from installed and repository versions per package.
type fakeYum struct {
	installed string
	repo      []string // versions the repository offers
	broken    bool     // yum list fails (repository unreachable)
}

func (f *fakeYum) Run(_ context.Context, _ []string, name string, args ...string) ([]byte, []byte, int, error) {
	switch name {
	case "rpm":
		var b strings.Builder
		for _, p := range args[3:] {
			fmt.Fprintf(&b, "%s\t%s\n", p, f.installed)
		}
		return []byte(b.String()), nil, 0, nil
	case "yum":
		if f.broken {
			return nil, []byte("Error: Failed to download metadata for repo 'wazuh': Cannot download repomd.xml: Curl error (6): Couldn't resolve host name\n"), 1, nil
		}
		pkg := args[len(args)-1]
		var b strings.Builder
		b.WriteString("Installed Packages\n")
		fmt.Fprintf(&b, "%s.x86_64    %s    @wazuh\nAvailable Packages\n", pkg, f.installed)
		for _, v := range f.repo {
			fmt.Fprintf(&b, "%s.x86_64    %s    wazuh\n", pkg, v)
		}
		return []byte(b.String()), nil, 0, nil
	}
	return nil, nil, -1, errors.New("unexpected " + name)
}

// unsupportedPackages is a package manager that cannot list versions.
type unsupportedPackages struct{ *packages.Manager }

func (unsupportedPackages) Candidates(_ context.Context, pkg string) (packages.Policy, error) {
	return packages.Policy{}, fmt.Errorf("candidates of %s: %w", pkg, packages.ErrUnsupported)
}

// TestVersionsGateYum: on a yum host the installability gate is evaluated
// (a target the repository lacks is a no-go naming it), and a package
// manager that cannot list versions is a no-go with the reason, never a
// silent pass.
func TestVersionsGateYum(t *testing.T) {
	for _, tt := range []struct {
		name   string
		yum    *fakeYum
		target string
		want   string // "" = ok
	}{
		{"offered", &fakeYum{installed: "4.9.0-1", repo: []string{"4.9.0-1", "4.10.0-1"}}, "4.10.0-1", ""},
		{"not offered", &fakeYum{installed: "4.9.0-1", repo: []string{"4.9.0-1", "4.9.1-1"}}, "4.10.0-1", "wazuh-indexer 4.10.0-1 is not installable (available: 4.9.1-1, 4.9.0-1)"},
		{"repository down", &fakeYum{installed: "4.9.0-1", broken: true}, "4.10.0-1", "Couldn't resolve host name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := packages.New(packages.KindYum, tt.yum)
			if err != nil {
				t.Fatal(err)
			}
			d := depsWith(testConfig(t, "profile: wazuh\npackages:\n  manager: yum\n"), nil)
			d.Packages = clientset.Of[steps.PackagesAPI](m)
			e := newEnv(d, map[string]any{rundata.KeyTargetVersions: all(tt.target)})
			out, err := run(t, d, e, "gate.versions", map[string]any{"check": "candidates", "version": "target"})
			var ng *engine.NoGoError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("want ok: %v", err)
			case tt.want != "" && (!errors.As(err, &ng) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("want a no-go with %q: %v (%s)", tt.want, err, out.Message)
			}
		})
	}
	m, _ := packages.New(packages.KindYum, &fakeYum{installed: "4.9.0-1"})
	d := depsWith(testConfig(t, "profile: wazuh\npackages:\n  manager: yum\n"), nil)
	d.Packages = clientset.Of[steps.PackagesAPI](unsupportedPackages{m})
	e := newEnv(d, map[string]any{rundata.KeyTargetVersions: all("4.10.0-1")})
	_, err := run(t, d, e, "gate.versions", map[string]any{"check": "candidates", "version": "target"})
	var ng *engine.NoGoError
	if !errors.As(err, &ng) || !strings.Contains(err.Error(), "installability unknown") {
		t.Fatalf("unsupported listing: %v", err)
	}
}
