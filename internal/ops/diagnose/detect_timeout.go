package diagnose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/units"
)

// ---- start timeout -------------------------------------------------------------

// startedLine and nodeStarted mark a start and its end in OpenSearch's log.
var (
	startingLine = regexp.MustCompile(`\] version\[[^\]]+\], pid\[\d+\]`)
	nodeStarted  = regexp.MustCompile(`\]\s+\[[^\]]+\] started$`)
)

func detectStartTimeout(_ context.Context, ev *Evidence) (Finding, bool) {
	st := ev.Unit
	if st.Result != "timeout" {
		return Finding{}, false
	}
	f := Finding{at: len(ev.Lines)}
	limit := "its start timeout"
	if st.TimeoutStart > 0 {
		limit = "TimeoutStartSec=" + st.TimeoutStart.String()
	}
	f.Cause = fmt.Sprintf("systemd gave up waiting for %s to start after %s (result timeout)", st.Name, limit)
	f.Evidence = []string{fmt.Sprintf("%s: result %s, TimeoutStartSec %s", st.Name, st.Failure(), durOr(st.TimeoutStart))}
	for _, p := range st.DropInPaths {
		f.Evidence = append(f.Evidence, "drop-in "+p)
	}
	// Type=notify from a drop-in over a unit file that is not: the package's
	// component does not tell systemd it is ready, so no timeout is enough
	if file, n := ev.unitSetting("Type=notify"); file != "" && file != st.FragmentPath {
		if frag, _ := ev.unitSettingIn(st.FragmentPath, "Type=notify"); frag == "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s:%d sets Type=notify; the unit file %s does not", file, n, cmpOr(st.FragmentPath, "(unknown)")))
			f.Cause += fmt.Sprintf("; the drop-in %s sets Type=notify, and %s as packaged here does not notify systemd that it is ready", file, ev.Component)
			f.Fix = fmt.Sprintf("remove Type=notify from %s (line %d; more time changes nothing), then systemctl daemon-reload and %s", file, n, start(ev.Component))
			return f, true
		}
	}
	needed := ev.lastStartTook()
	want := 3 * time.Minute
	if needed > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("its last complete start took %s (from its own log)", needed.Round(time.Second)))
		want = max(want, 3*needed).Round(time.Minute)
	}
	dir := "/etc/systemd/system/" + st.Name + ".d"
	if len(st.DropInPaths) > 0 {
		// next to the unit's drop-ins: "zz-" sorts after them and wins
		dir = filepath.Dir(st.DropInPaths[len(st.DropInPaths)-1])
	}
	f.Fix = fmt.Sprintf("give it more time: a drop-in %s/zz-start-timeout.conf with [Service] TimeoutStartSec=%ds (and look for what made it slow: an ExecStartPre in the drop-ins above, the host's load), then systemctl daemon-reload and %s",
		dir, int(want.Seconds()), start(ev.Component))
	return f, true
}

func durOr(d time.Duration) string {
	if d <= 0 {
		return "unknown"
	}
	return d.String()
}

// lastStartTook is how long the component's last complete start took, from
// its own log (the indexer: "version[…], pid[…]" to "started").
func (ev *Evidence) lastStartTook() time.Duration {
	var files []string
	for _, f := range ev.componentLogs() {
		files = append(files, ev.path(f))
	}
	var took time.Duration
	for _, f := range files {
		lines, err := units.TailFile(f, 5000)
		if err != nil {
			continue
		}
		var from time.Time
		for _, l := range lines {
			t, ok := stamp(l)
			if !ok {
				continue
			}
			switch {
			case startingLine.MatchString(l):
				from = t
			case nodeStarted.MatchString(strings.TrimSpace(l)) && !from.IsZero():
				took, from = t.Sub(from), time.Time{}
			}
		}
	}
	return took
}

// unitSetting is the last drop-in (or the unit file) with a line equal to
// setting, and its line number.
func (ev *Evidence) unitSetting(setting string) (string, int) {
	files := append([]string{ev.Unit.FragmentPath}, ev.Unit.DropInPaths...)
	for i := len(files) - 1; i >= 0; i-- {
		if files[i] == "" {
			continue
		}
		b, err := os.ReadFile(ev.path(files[i]))
		if err != nil {
			continue
		}
		for n, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) == setting {
				return files[i], n + 1
			}
		}
	}
	return "", 0
}

// unitSettingIn is unitSetting for one file ("" when file is "").
func (ev *Evidence) unitSettingIn(file, setting string) (string, int) {
	if file == "" {
		return "", 0
	}
	b, err := os.ReadFile(ev.path(file))
	if err != nil {
		return "", 0
	}
	for n, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == setting {
			return file, n + 1
		}
	}
	return "", 0
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
