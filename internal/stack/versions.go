package stack

import (
	"context"
	"sync"
)

// ComponentVersion is what is known of one component's version.
type ComponentVersion struct {
	Package string `json:"package"`         // installed package version, "" if not installed or unknown
	API     string `json:"api"`             // what the running component reports, "" if unreachable
	Error   string `json:"error,omitempty"` // why something is unknown
}

// Versions asks the package manager and the running components, concurrently.
// It never fails as a whole: unknown parts carry their reason.
func (s *Stack) Versions(ctx context.Context) map[string]ComponentVersion {
	out := map[string]ComponentVersion{}
	for _, c := range []string{"indexer", "manager", "dashboard", "shipper"} {
		out[c] = ComponentVersion{}
	}
	var mu sync.Mutex
	set := func(comp string, fn func(*ComponentVersion)) {
		mu.Lock()
		v := out[comp]
		fn(&v)
		out[comp] = v
		mu.Unlock()
	}
	var wg sync.WaitGroup
	run := func(fn func()) { wg.Add(1); go func() { defer wg.Done(); fn() }() }
	run(func() {
		pv, err := s.InstalledVersions(ctx)
		for comp := range out {
			set(comp, func(v *ComponentVersion) {
				if err != nil {
					v.Error = s.Redactor.String(err.Error())
					return
				}
				v.Package = pv[comp]
			})
		}
	})
	run(func() {
		ix, err := s.NeedIndexer()
		if err == nil {
			vs, verr := ix.NodesVersions(ctx)
			err = verr
			if verr == nil && len(vs) > 0 {
				set("indexer", func(v *ComponentVersion) { v.API = "OpenSearch " + vs[0].Version })
			}
		}
		if err != nil {
			set("indexer", func(v *ComponentVersion) { v.Error = s.Redactor.String(err.Error()) })
		}
	})
	run(func() {
		m, err := s.NeedManager()
		if err == nil {
			info, ierr := m.Info(ctx)
			err = ierr
			if ierr == nil {
				set("manager", func(v *ComponentVersion) { v.API = info.APIVersion })
			}
		}
		if err != nil {
			set("manager", func(v *ComponentVersion) { v.Error = s.Redactor.String(err.Error()) })
		}
	})
	run(func() {
		d, err := s.Dashboard(ctx)
		if err != nil {
			set("dashboard", func(v *ComponentVersion) { v.Error = s.Redactor.String(err.Error()) })
			return
		}
		set("dashboard", func(v *ComponentVersion) { v.API = d.Version })
	})
	wg.Wait()
	return out
}
