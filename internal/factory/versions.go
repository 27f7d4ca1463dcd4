package factory

import (
	"context"
	"sync"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/packages"
)

// Versions asks the package manager and the running components, concurrently.
// It never fails as a whole: unknown parts carry their reason.
func (s *Clients) Versions(ctx context.Context) map[string]cli.ComponentVersion {
	out := map[string]cli.ComponentVersion{}
	for _, c := range config.Components {
		out[c] = cli.ComponentVersion{}
	}
	// running is what each running component reports about itself.
	running := map[string]func() (string, error){
		"indexer": func() (string, error) {
			ix, err := s.NeedIndexer()
			if err != nil {
				return "", err
			}
			vs, err := ix.NodesVersions(ctx)
			if err != nil || len(vs) == 0 {
				return "", err
			}
			return "OpenSearch " + vs[0].Version, nil
		},
		"manager": func() (string, error) {
			m, err := s.NeedManager()
			if err != nil {
				return "", err
			}
			info, err := m.Info(ctx)
			return info.APIVersion, err
		},
		"dashboard": func() (string, error) {
			d, err := s.Dashboard.Status(ctx)
			return d.Version, err
		},
	}
	var mu sync.Mutex
	set := func(comp string, fn func(*cli.ComponentVersion)) {
		mu.Lock()
		v := out[comp]
		fn(&v)
		out[comp] = v
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		pv, err := s.installedVersions(ctx)
		for _, comp := range config.Components { // not range out: the other goroutines write it
			set(comp, func(v *cli.ComponentVersion) {
				if err != nil {
					v.Error = s.Redactor.String(err.Error())
					return
				}
				v.Package = pv[comp]
			})
		}
	})
	for comp, version := range running {
		wg.Go(func() {
			api, err := version()
			set(comp, func(v *cli.ComponentVersion) {
				if err != nil {
					v.Error = s.Redactor.String(err.Error())
					return
				}
				v.API = api
			})
		})
	}
	wg.Wait()
	return out
}

// installedVersions returns component → installed package version.
func (s *Clients) installedVersions(ctx context.Context) (map[string]string, error) {
	pm, err := s.NeedPackages()
	if err != nil {
		return nil, err
	}
	return packages.ByComponent(ctx, pm, s.Config.PackageNames())
}
