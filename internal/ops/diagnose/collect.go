package diagnose

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/siemctl/siemctl/internal/flatmap"
	"github.com/siemctl/siemctl/internal/units"
)

// collect reads the component's logs since its last start: the unit's own
// output (a file or the journal) and the component's log (the indexer's
// <path.logs>/<cluster.name>.log, the manager's ossec.log).
func (ev *Evidence) collect(ctx context.Context) {
	st := ev.Unit
	logf := ev.LogLines
	if logf == nil {
		logf = units.LastLogLines
	}
	if st.Name != "" {
		src := "journal of " + st.Name
		if f := st.LogFile(); f != "" {
			src = f
		}
		if lines, err := logf(ctx, st, defaultLogLines); err == nil {
			ev.add(src, SinceStart(lines, st.StartedAt))
		} else {
			ev.Sources = append(ev.Sources, fmt.Sprintf("%s (unreadable: %v)", src, err))
		}
	}
	for _, f := range ev.componentLogs() {
		lines, err := units.TailFile(ev.path(f), defaultLogLines)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			ev.Sources = append(ev.Sources, fmt.Sprintf("%s (unreadable: %v)", f, err))
		default:
			// every line of the component's own log is stamped or
			// continues a stamped one: an earlier run's lines all go
			ev.add(f, sinceStamp(lines, ev.Unit.StartedAt))
		}
	}
}

// add keeps the lines of one log.
func (ev *Evidence) add(src string, lines []string) {
	ev.Sources = append(ev.Sources, src)
	ev.Lines = append(ev.Lines, lines...)
}

// sinceStamp keeps the lines from the first one stamped at or after
// started (a second of slack); zero keeps all.
func sinceStamp(lines []string, started time.Time) []string {
	if started.IsZero() {
		return lines
	}
	for i, l := range lines {
		if t, ok := stamp(l); ok && !t.Before(started.Add(-time.Second)) {
			return lines[i:]
		}
	}
	return nil
}

// componentLogs are the component's own logs (paths as the services see
// them).
func (ev *Evidence) componentLogs() []string {
	c := ev.Config
	if c == nil {
		return nil
	}
	switch ev.Component {
	case "indexer":
		if f := indexerLogOf(ev.indexerYAML()); f != "" {
			return []string{f}
		}
	case "manager":
		if c.Manager.InstallDir != "" {
			return []string{filepath.Join(c.Manager.InstallDir, "logs", "ossec.log")}
		}
	case "shipper":
		if f := ev.shipperConfigFile(); f != "" {
			if y, err := readFlatYAML(ev.path(f)); err == nil && len(y["logging.files.path"]) > 0 && firstOr(y["logging.to_files"], "true") == "true" {
				return []string{filepath.Join(y["logging.files.path"][0], firstOr(y["logging.files.name"], "filebeat"))}
			}
		}
	}
	return nil
}

// indexerLogOf is the indexer's own log as opensearch.yml's settings (y)
// place it, <path.logs>/<cluster.name>.log ("" without path.logs).
func indexerLogOf(y map[string]string) string {
	if y["path.logs"] == "" {
		return ""
	}
	return filepath.Join(y["path.logs"], defaultStr(y["cluster.name"], "opensearch")+".log")
}

func defaultStr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// indexerYAMLFile is opensearch.yml in indexer.config_dir.
func (ev *Evidence) indexerYAMLFile() string {
	if ev.Config == nil || ev.Config.Indexer.ConfigDir == "" {
		return ""
	}
	return filepath.Join(ev.Config.Indexer.ConfigDir, "opensearch.yml")
}

// indexerYAML reads opensearch.yml's scalar settings, flattened
// ("path.logs", "http.port").
func (ev *Evidence) indexerYAML() map[string]string {
	f := ev.indexerYAMLFile()
	if f == "" {
		return map[string]string{}
	}
	return readIndexerYAML(ev.path(f))
}

// readIndexerYAML reads the opensearch.yml at path as indexerYAML does.
func readIndexerYAML(path string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	var m map[string]any
	if yaml.Unmarshal(b, &m) != nil {
		return out
	}
	for k, v := range flatmap.Flatten(m) {
		if _, list := v.([]any); !list {
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

var (
	// OpenSearch's log4j layout: [2026-11-27T21:40:00,123][INFO ]…
	osStamp = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)[,.]\d+\]`)
	// ossec.log: 2026/11/27 21:40:00 wazuh-analysisd: …
	ossecStamp = regexp.MustCompile(`^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) `)
	// Filebeat 7.x (logp's ISO8601 with its zone): 2026-11-27T21:40:00.123Z	INFO	…
	beatStamp = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:?\d\d))\s`)
	// OpenSearch Dashboards' JSON log ("@timestamp") and the lab's ("time")
	jsonStamp = regexp.MustCompile(`^\{.*?"(?:@timestamp|time)":"(\d{4}-\d\d-\d\dT[^"]+)"`)
)

// stamp parses a log line's leading timestamp (local time, as OpenSearch
// and the manager write it; Filebeat and the dashboard's JSON carry their
// zone).
func stamp(line string) (time.Time, bool) {
	if m := osStamp.FindStringSubmatch(line); m != nil {
		t, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], time.Local)
		return t, err == nil
	}
	if m := ossecStamp.FindStringSubmatch(line); m != nil {
		t, err := time.ParseInLocation("2006/01/02 15:04:05", m[1], time.Local)
		return t, err == nil
	}
	if m := beatStamp.FindStringSubmatch(line); m != nil {
		for _, layout := range []string{"2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999Z07:00"} {
			if t, err := time.Parse(layout, m[1]); err == nil {
				return t, true
			}
		}
	}
	if m := jsonStamp.FindStringSubmatch(line); m != nil {
		t, err := time.Parse(time.RFC3339Nano, m[1])
		return t, err == nil
	}
	return time.Time{}, false
}

// SinceStart keeps the lines written since started (the unit's last start;
// zero keeps all): from the first line stamped at or after it (a second of
// slack); lines without a stamp after the last earlier stamped line and
// its continuation (a JVM that refused to start prints no stamp) are kept.
func SinceStart(lines []string, started time.Time) []string {
	if started.IsZero() {
		return lines
	}
	from := started.Add(-time.Second)
	lastBefore := -1
	for i, l := range lines {
		t, ok := stamp(l)
		if !ok {
			continue
		}
		if !t.Before(from) {
			return lines[i:]
		}
		lastBefore = i
	}
	if lastBefore < 0 {
		return lines
	}
	// skip the earlier run's uncaught exception (OpenSearch ends it with
	// "For complete error details …") and the line's continuation (stack
	// trace, indented lines)
	i := lastBefore + 1
	for j := i; j < len(lines); j++ {
		if strings.HasPrefix(lines[j], "For complete error details") {
			i = j + 1
		}
	}
	for i < len(lines) && continuation(lines[i]) {
		i++
	}
	return lines[i:]
}

func continuation(l string) bool {
	return l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "Caused by") ||
		strings.HasPrefix(l, "Likely root cause") || strings.HasPrefix(l, "For complete error details") ||
		strings.HasPrefix(l, "ERROR: ") || strings.HasPrefix(l, "bootstrap check failure") || strings.HasPrefix(l, "...")
}

func readDirNames(p string) ([]string, error) {
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
	}
	return out, nil
}
