// Package buildinfo holds siemctl's own version, commit and build date, set at link time
// (make build and make dist do this):
//
//	go build -ldflags "-X github.com/siemctl/siemctl/internal/buildinfo.Version=v1.2.3
//	  -X github.com/siemctl/siemctl/internal/buildinfo.Commit=<sha>
//	  -X github.com/siemctl/siemctl/internal/buildinfo.Date=2026-11-23T21:00:00Z"
//
// Without them the Go build metadata fills the gaps: `go install …/cmd/siemctl@v1.2.3` records
// the module version v1.2.3, and a build in a git checkout records the commit and its time.
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
	bi, _ := debug.ReadBuildInfo()
	return get(Version, Commit, Date, bi)
}

func get(version, commit, date string, bi *debug.BuildInfo) Info {
	i := Info{Version: version, Commit: commit, Date: date}
	if bi == nil {
		return i
	}
	i.GoVersion = bi.GoVersion
	// "(devel)" is what a build inside the module without VCS information records.
	if (i.Version == "" || i.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = bi.Main.Version
	}
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
	return i
}
