package diagnose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ---- heap ----------------------------------------------------------------------

func detectHeapOrder(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Initial heap size set to a larger value than the maximum heap size", "Incompatible minimum and maximum heap sizes specified")
	if i < 0 {
		return Finding{}, false
	}
	h := ev.heap()
	f := Finding{Evidence: append([]string{line}, h.evidence()...), at: i}
	f.Cause = fmt.Sprintf("the JVM refused its options: -Xms%s is above -Xmx%s", orQ(h.xms), orQ(h.xmx))
	f.Fix = h.fix(ev, "set -Xms and -Xmx to the same value")
	return f, true
}

func detectHeapSize(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("os::commit_memory", "There is insufficient memory for the Java Runtime Environment",
		"Could not reserve enough space for object heap", "Cannot allocate memory", "Too small maximum heap", "Invalid maximum heap size", "Invalid initial heap size")
	if i < 0 {
		return Finding{}, false
	}
	h := ev.heap()
	f := Finding{Evidence: append([]string{line}, h.evidence()...), at: i}
	mem := ev.memTotal()
	switch {
	case strings.Contains(line, "Invalid") || strings.Contains(line, "Too small"):
		f.Cause = fmt.Sprintf("the JVM refused its heap size (-Xms%s -Xmx%s)", orQ(h.xms), orQ(h.xmx))
	case mem > 0:
		f.Cause = fmt.Sprintf("the heap (-Xms%s -Xmx%s) does not fit in the host's memory (%s)", orQ(h.xms), orQ(h.xmx), size(mem))
	default:
		f.Cause = fmt.Sprintf("the JVM could not get its heap (-Xms%s -Xmx%s)", orQ(h.xms), orQ(h.xmx))
	}
	f.Fix = h.fix(ev, "lower -Xms and -Xmx")
	return f, true
}

func orQ(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// heapSetting is where the JVM's -Xms and -Xmx come from: jvm.options,
// then jvm.options.d/*.options in name order (the last setting wins).
type heapSetting struct {
	xms, xmx         string
	xmsFile, xmxFile string
	files            []string
	// baseXms, baseXmx are jvm.options' own values (before jvm.options.d).
	baseXms, baseXmx string
	// ignored are heap options of a unit's Environment= line that systemd
	// does not pass (words of an unquoted value after the first).
	ignored []string
}

var heapOpt = regexp.MustCompile(`^(?:\d+(?:-\d*)?:)?-(Xms|Xmx)(\S+)$`)

func (ev *Evidence) heap() heapSetting {
	var h heapSetting
	if ev.Config == nil || ev.Config.Indexer.ConfigDir == "" {
		return h
	}
	dir := ev.Config.Indexer.ConfigDir
	files := []string{filepath.Join(dir, "jvm.options")}
	if more, err := filepath.Glob(ev.path(filepath.Join(dir, "jvm.options.d", "*.options"))); err == nil {
		slices.Sort(more)
		for _, m := range more {
			files = append(files, strings.TrimPrefix(m, ev.Host.Root))
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(ev.path(f))
		if err != nil {
			continue
		}
		h.files = append(h.files, f)
		for _, l := range strings.Split(string(b), "\n") {
			m := heapOpt.FindStringSubmatch(strings.TrimSpace(l))
			if m == nil {
				continue
			}
			if m[1] == "Xms" {
				h.xms, h.xmsFile = m[2], f
			} else {
				h.xmx, h.xmxFile = m[2], f
			}
			if f == files[0] {
				h.baseXms, h.baseXmx = h.xms, h.xmx
			}
		}
	}
	// OPENSEARCH_JAVA_OPTS comes after the options files and wins: the unit's
	// Environment= in its file or a drop-in (the last one systemd reads)
	for _, f := range append([]string{ev.Unit.FragmentPath}, ev.Unit.DropInPaths...) {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(ev.path(f))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			opts, ignored, ok := unitEnv(l, "OPENSEARCH_JAVA_OPTS")
			for _, w := range ignored {
				if heapOpt.MatchString(w) {
					// Environment=OPENSEARCH_JAVA_OPTS=-Xms4g -Xmx4g, unquoted
					h.ignored = append(h.ignored, fmt.Sprintf("%s: systemd ignores %s (Environment= splits at spaces and %s is no assignment: quote the whole one, Environment=\"OPENSEARCH_JAVA_OPTS=… …\")", f, w, w))
				}
			}
			if !ok {
				continue
			}
			for _, tok := range strings.Fields(opts) {
				if m := heapOpt.FindStringSubmatch(tok); m != nil {
					if m[1] == "Xms" {
						h.xms, h.xmsFile = m[2], f
					} else {
						h.xmx, h.xmxFile = m[2], f
					}
					if !slices.Contains(h.files, f) {
						h.files = append(h.files, f)
					}
				}
			}
		}
	}
	return h
}

func (h heapSetting) evidence() []string {
	var out []string
	if h.xms != "" {
		out = append(out, fmt.Sprintf("-Xms%s set in %s", h.xms, h.xmsFile))
	}
	if h.xmx != "" {
		out = append(out, fmt.Sprintf("-Xmx%s set in %s", h.xmx, h.xmxFile))
	}
	if len(out) == 0 && len(h.files) > 0 {
		out = append(out, "no -Xms/-Xmx in "+strings.Join(h.files, ", "))
	}
	return append(out, h.ignored...)
}

// unitEnv reads a unit file's line as systemd reads Environment=: assignments
// separated by spaces, a quoted part ("…" or '…') kept whole; a word without
// "=" is no assignment, and systemd ignores it. value is name's (ok: the line
// sets it; the last assignment wins), ignored the words that are none.
func unitEnv(line, name string) (value string, ignored []string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(line), "Environment=")
	if !found {
		return "", nil, false
	}
	for _, w := range unitWords(rest) {
		k, v, assign := strings.Cut(w, "=")
		switch {
		case !assign || k == "":
			ignored = append(ignored, w)
		case k == name:
			value, ok = v, true
		}
	}
	return value, ignored, ok
}

// unitWords splits a unit setting's value into words as systemd does:
// spaces separate, quotes group and are removed, a backslash escapes.
func unitWords(s string) []string {
	var (
		out   []string
		cur   strings.Builder
		word  bool
		quote byte
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			word = true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, word = c, true
		case c == ' ' || c == '\t':
			if word {
				out = append(out, cur.String())
				cur.Reset()
				word = false
			}
		default:
			cur.WriteByte(c)
			word = true
		}
	}
	if word {
		out = append(out, cur.String())
	}
	return out
}

// fix proposes a heap: half the host's memory, at most 31g (compressed
// pointers) and at least 512m, or the current -Xmx when it fits.
func (h heapSetting) fix(ev *Evidence, what string) string {
	mem := ev.memTotal()
	// an override in jvm.options.d over a sound jvm.options: remove it
	if len(h.files) > 0 {
		base := h.files[0]
		bms, bmx := parseSize(h.baseXms), parseSize(h.baseXmx)
		var over []string
		for _, f := range []string{h.xmsFile, h.xmxFile} {
			if f != "" && f != base && !slices.Contains(over, f) {
				over = append(over, f)
			}
		}
		if len(over) > 0 && bms > 0 && bmx > 0 && bms <= bmx && (mem == 0 || bmx <= mem/2) {
			if unitFile := strings.Join(over, " "); strings.Contains(unitFile, ".service") {
				// the unit's Environment=OPENSEARCH_JAVA_OPTS, not an options file
				return fmt.Sprintf("%s: remove -Xms/-Xmx from Environment=OPENSEARCH_JAVA_OPTS in %s (%s sets -Xms%s -Xmx%s, which fits), then systemctl daemon-reload and %s",
					what, strings.Join(over, " and "), base, h.baseXms, h.baseXmx, start(ev.Component))
			}
			return fmt.Sprintf("%s: remove the -Xms/-Xmx lines from %s (%s sets -Xms%s -Xmx%s, which fits), then %s",
				what, strings.Join(over, " and "), base, h.baseXms, h.baseXmx, start(ev.Component))
		}
	}
	want := "512m"
	if mem > 0 {
		half := mem / 2 >> 20 // MiB
		half = min(half, 31*1024)
		if cur := parseSize(h.xmx); cur > 0 && cur <= mem/2 {
			half = cur >> 20
		}
		half = max(half, 512)
		if half%1024 == 0 {
			want = fmt.Sprintf("%dg", half/1024)
		} else {
			want = fmt.Sprintf("%dm", half)
		}
	}
	file := h.xmxFile
	if h.xmsFile != "" && h.xmsFile != h.xmxFile {
		file = h.xmsFile + " and " + h.xmxFile
	}
	if file == "" {
		file = "jvm.options"
		if ev.Config != nil {
			file = filepath.Join(ev.Config.Indexer.ConfigDir, "jvm.options")
		}
	}
	memNote := ""
	if mem > 0 {
		memNote = fmt.Sprintf(" (at most half the host's %s)", size(mem))
	}
	return fmt.Sprintf("%s: in %s set -Xms%s and -Xmx%s%s, then %s", what, file, want, want, memNote, start(ev.Component))
}

// parseSize reads a JVM size ("4g", "512m", "1024k", "1073741824").
func parseSize(s string) uint64 {
	if s == "" {
		return 0
	}
	mult := uint64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	case "t":
		mult = 1 << 40
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return n * mult
}

// memTotal is the host's MemTotal from /proc/meminfo (bytes; 0 unknown).
func (ev *Evidence) memTotal() uint64 {
	b, err := os.ReadFile(filepath.Join(ev.Host.ProcRoot, "meminfo"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n << 10
		}
	}
	return 0
}
