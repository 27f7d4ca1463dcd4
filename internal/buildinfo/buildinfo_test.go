package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestGet(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-01T10:00:00Z"}}
	tests := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "ldflags win", version: "v1.2.3", commit: "feed", date: "2026-11-23T21:00:00Z",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v9.9.9"}, Settings: vcs},
			want: Info{Version: "v1.2.3", Commit: "feed", Date: "2026-11-23T21:00:00Z", GoVersion: "go1.26.8"}},
		{name: "go install @vX", version: "dev",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/siemctl/siemctl", Version: "v1.4.0"}},
			want: Info{Version: "v1.4.0", GoVersion: "go1.26.8"}},
		{name: "build in a checkout", version: "dev",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			want: Info{Version: "dev", Commit: "0123abcd", Date: "2026-11-01T10:00:00Z", GoVersion: "go1.26.8"}},
		{name: "no build info", version: "dev", want: Info{Version: "dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := get(tt.version, tt.commit, tt.date, tt.bi); got != tt.want {
				t.Fatalf("get = %+v, want %+v", got, tt.want)
			}
		})
	}
}
