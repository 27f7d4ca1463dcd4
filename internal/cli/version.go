package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/buildinfo"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/packages"
)

func newCmdVersion(f *Factory) *cobra.Command {
	var short bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show siemctl's build and the stack's component versions",
		Long: `Show siemctl's own build, then each component's installed package version and the
version its running service reports (the indexer's real OpenSearch version, the manager API's
version, the dashboard's). Unknown parts say why; this command never fails because the stack is down.`,
		Example: "  siemctl version\n  siemctl version --short\n  siemctl version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			bi := buildinfo.Get()
			var comps map[string]ComponentVersion
			var cfgErr error
			if !short {
				ctx, cancel := WithTimeout(cmd.Context(), f.Global.Timeout)
				defer cancel()
				if st, err := f.Clients(ctx); err != nil {
					cfgErr = err
				} else {
					comps = st.Versions(ctx)
				}
			}
			if f.Global.Output == "json" {
				doc := map[string]any{"siemctl": bi}
				if comps != nil {
					doc["stack"] = comps
				}
				if cfgErr != nil {
					doc["stack_error"] = cfgErr.Error()
				}
				return output.JSON(f.IO.Out, doc)
			}
			if short {
				_, err := fmt.Fprintln(f.IO.Out, bi.Version)
				return err
			}
			if err := output.KV(f.IO.Out, [2]string{"siemctl", bi.Version}, [2]string{"commit", output.Dash(bi.Commit)}, [2]string{"built", output.Dash(bi.Date)}, [2]string{"go", bi.GoVersion}); err != nil {
				return err
			}
			if cfgErr != nil {
				fmt.Fprintf(f.IO.ErrOut, "stack versions unknown: %v\n", cfgErr)
				return nil
			}
			if comps == nil {
				return nil
			}
			fmt.Fprintln(f.IO.Out)
			t := output.NewTable(f.IO.Out, f.IO.IsStdoutTTY(), "component", "package", "running", "note")
			for _, c := range config.Components {
				v := comps[c]
				t.Row(c, output.Dash(v.Package), output.Dash(v.API), v.Error)
			}
			return t.Render()
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print only siemctl's version, on one line (no stack queries; -o json: the whole build)")
	return cmd
}

// ComponentVersion is what is known of one component's version.
type ComponentVersion struct {
	Package string `json:"package"`         // installed package version, "" if not installed or unknown
	API     string `json:"api"`             // what the running component reports, "" if unreachable
	Error   string `json:"error,omitempty"` // why something is unknown
}

// Versions asks the package manager and the running components, concurrently.
// It never fails as a whole: unknown parts carry their reason.
func (s *Clients) Versions(ctx context.Context) map[string]ComponentVersion {
	out := map[string]ComponentVersion{}
	for _, c := range config.Components {
		out[c] = ComponentVersion{}
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
	set := func(comp string, fn func(*ComponentVersion)) {
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
			set(comp, func(v *ComponentVersion) {
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
			set(comp, func(v *ComponentVersion) {
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
