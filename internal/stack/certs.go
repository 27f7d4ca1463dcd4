package stack

import (
	"context"
	"net/url"
	"sync"

	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/hostcheck"
)

// Certs reads the certificates of the indexer, manager API and dashboard
// endpoints (concurrently) and of the configured CA files.
func (s *Stack) Certs(ctx context.Context) ([]health.CertInfo, error) {
	c := s.Config
	type endpoint struct {
		component, raw, ca string
		insecure           bool
	}
	eps := []endpoint{
		{"indexer", c.Indexer.URL, c.Indexer.CAFile, c.Indexer.Insecure},
		{"manager API", c.Manager.APIURL, c.Manager.CAFile, c.Manager.Insecure},
		{"dashboard", c.Dashboard.URL, c.Dashboard.CAFile, c.Dashboard.Insecure},
	}
	var (
		mu  sync.Mutex
		out []health.CertInfo
		wg  sync.WaitGroup
	)
	for _, ep := range eps {
		u, err := url.Parse(ep.raw)
		if err != nil || u.Scheme != "https" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ci, err := hostcheck.CertExpiry(ctx, u.Host, netclient.TLSOptions{CAFile: ep.ca, Insecure: ep.insecure})
			info := health.CertInfo{Component: ep.component, Source: u.Host, Subject: ci.Subject, NotAfter: ci.NotAfter, Err: err}
			mu.Lock()
			out = append(out, info)
			mu.Unlock()
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, f := range []struct{ component, path string }{{"indexer CA", c.Indexer.CAFile}, {"manager CA", c.Manager.CAFile}, {"dashboard CA", c.Dashboard.CAFile}} {
		if f.path == "" || seen[f.path] || !fileExists(f.path) {
			continue
		}
		seen[f.path] = true
		certs, err := hostcheck.PEMExpiry(f.path)
		if err != nil {
			out = append(out, health.CertInfo{Component: f.component, Source: f.path, Err: err})
			continue
		}
		for _, ci := range certs {
			out = append(out, health.CertInfo{Component: f.component, Source: f.path, Subject: ci.Subject, NotAfter: ci.NotAfter})
		}
	}
	return out, nil
}
