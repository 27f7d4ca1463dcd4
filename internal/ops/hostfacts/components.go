package hostfacts

import (
	"context"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Endpoint is a component's HTTPS endpoint or CA file whose certificates
// are read.
type Endpoint struct {
	Component string // e.g. "indexer", "manager API"
	CALabel   string // the component of its CA file's certificates, e.g. "indexer CA"
	URL       string // only https URLs are dialled
	TLS       netclient.TLSOptions
}

// ComponentCert is one certificate read for a component: the leaf of its
// endpoint or one certificate of its CA file.
type ComponentCert struct {
	Component string
	Source    string // host:port or file
	Subject   string
	NotAfter  time.Time
	Err       error // could not be read at all
}

// ComponentCerts reads the leaf certificate of each https endpoint
// (concurrently) and then every certificate of each endpoint's CA file
// (each file once, labelled with CALabel; a missing file is skipped).
func ComponentCerts(ctx context.Context, eps []Endpoint) []ComponentCert {
	var (
		mu  sync.Mutex
		out []ComponentCert
		wg  sync.WaitGroup
	)
	for _, ep := range eps {
		u, err := url.Parse(ep.URL)
		if err != nil || u.Scheme != "https" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ci, err := CertExpiry(ctx, u.Host, ep.TLS)
			info := ComponentCert{Component: ep.Component, Source: u.Host, Subject: ci.Subject, NotAfter: ci.NotAfter, Err: err}
			mu.Lock()
			out = append(out, info)
			mu.Unlock()
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, ep := range eps {
		path := ep.TLS.CAFile
		if path == "" || seen[path] {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			continue
		}
		seen[path] = true
		certs, err := PEMExpiry(path)
		if err != nil {
			out = append(out, ComponentCert{Component: ep.CALabel, Source: path, Err: err})
			continue
		}
		for _, ci := range certs {
			out = append(out, ComponentCert{Component: ep.CALabel, Source: path, Subject: ci.Subject, NotAfter: ci.NotAfter})
		}
	}
	return out
}
