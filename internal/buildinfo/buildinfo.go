// Package buildinfo holds siemctl's own version, set at link time:
//
//	go build -ldflags "-X github.com/siemctl/siemctl/internal/buildinfo.Version=v1.2.3"
package buildinfo

import "runtime/debug"

// Set by -ldflags at build time.
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// Info is siemctl's own build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
}

// Get returns the build info, filling gaps from the Go build metadata.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, Date: Date}
	if bi, ok := debug.ReadBuildInfo(); ok {
		i.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Commit == "" {
					i.Commit = s.Value
				}
			case "vcs.time":
				if i.Date == "" {
					i.Date = s.Value
				}
			}
		}
	}
	return i
}
