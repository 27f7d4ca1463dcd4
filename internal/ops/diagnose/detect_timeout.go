package diagnose

import (
	"context"
	"fmt"
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
