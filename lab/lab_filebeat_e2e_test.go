//go:build e2e

package lab

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

// TestE2EFilebeatBuild builds (or finds in ~/.cache/siemlab) the real Filebeat OSS 7.10.2, runs it,
// and checks that the wrapper go.mod carries every require and replace of the real beats go.mod.
func TestE2EFilebeatBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dir, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	c := &FilebeatCache{Dir: dir, Progress: os.Stderr}
	t0 := time.Now()
	bin, built, err := c.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Filebeat %s (built %v) in %s", bin, built, time.Since(t0).Round(time.Millisecond))
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "filebeat version 7.10.2 (amd64), libbeat 7.10.2") {
		t.Fatalf("%s version: %v %q", bin, err, out)
	}
	if ok, why := c.Ready(); !ok {
		t.Fatalf("cache not ready after Ensure: %s", why)
	}

	// The real beats go.mod (from the module cache the build used) and the wrapper made from it.
	dl, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", beatsModule+"@v"+FilebeatVersion).Output()
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(dl, &info); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(info.GoMod)
	if err != nil {
		t.Fatal(err)
	}
	beats, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := FilebeatWrapperGoMod(data, FilebeatVersion)
	if err != nil {
		t.Fatal(err)
	}
	wrapper, err := modfile.Parse("go.mod", w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(wrapper.Require) != len(beats.Require)+1 || len(wrapper.Replace) != len(beats.Replace) || len(beats.Replace) == 0 {
		t.Errorf("wrapper: %d requires, %d replaces; beats: %d requires, %d replaces",
			len(wrapper.Require), len(wrapper.Replace), len(beats.Require), len(beats.Replace))
	}
	t.Logf("beats go.mod: %d requires, %d replaces, go %s", len(beats.Require), len(beats.Replace), beats.Go.Version)
}
