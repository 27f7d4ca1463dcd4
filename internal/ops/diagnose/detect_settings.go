package diagnose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ---- the root of a Java exception chain ------------------------------------------

// rootCause is the deepest cause the log names for the latest failure:
// OpenSearch's "Likely root cause: X", else the last "Caused by: X", else
// the exception line right after "uncaught exception in thread" or after
// a bare "[ERROR]… Exception" line. "" when none.
func rootCause(lines []string) (int, string) {
	for i := len(lines) - 1; i >= 0; i-- {
		t := strings.TrimSpace(lines[i])
		if r, ok := strings.CutPrefix(t, "Likely root cause: "); ok {
			return i, r
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		t := strings.TrimSpace(lines[i])
		if r, ok := strings.CutPrefix(t, "Caused by: "); ok {
			return i, r
		}
	}
	for i := len(lines) - 2; i >= 0; i-- {
		t := strings.TrimSpace(lines[i])
		if strings.HasPrefix(t, "uncaught exception in thread") || strings.HasSuffix(t, "] Exception") {
			if n := strings.TrimSpace(lines[i+1]); n != "" && !strings.HasPrefix(n, "at ") {
				return i + 1, n
			}
		}
	}
	return -1, ""
}

// ---- unknown setting --------------------------------------------------------------

// KindUnknownSetting is a setting OpenSearch does not know (a typo, a
// removed setting, a plugin's setting without the plugin).
const KindUnknownSetting = "unknown-setting"

var unknownSetting = regexp.MustCompile(`unknown setting \[([^\]]+)\]`)

func detectUnknownSetting(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("unknown setting [")
	if i < 0 {
		return Finding{}, false
	}
	m := unknownSetting.FindStringSubmatch(line)
	if m == nil {
		return Finding{}, false
	}
	key := m[1]
	file := ev.indexerYAMLFile()
	f := Finding{Kind: KindUnknownSetting, at: i, Evidence: []string{line}}
	where := ""
	if n := lineOf(ev.path(file), key); n > 0 {
		where = fmt.Sprintf(" (line %d)", n)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s:%d sets %s", file, n, key))
	}
	f.Cause = fmt.Sprintf("OpenSearch refuses the unknown setting [%s] in %s%s", key, file, where)
	f.Fix = fmt.Sprintf("remove or correct %s in %s%s (a typo, a setting this version removed, or one of a plugin that is not installed), then %s", key, file, where, start(ev.Component))
	return f, true
}

// lineOf is the 1-based line of file that sets key, flat ("a.b.c:") or by
// its last part under a nesting; 0 when not found.
func lineOf(file, key string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	last := key[strings.LastIndex(key, ".")+1:]
	byLast := 0
	for n, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, key+":") {
			return n + 1
		}
		if byLast == 0 && strings.HasPrefix(t, last+":") {
			byLast = n + 1
		}
	}
	return byLast
}

// ---- JVM options -------------------------------------------------------------------

// KindJVMOption is an option the JVM refused to start with.
const KindJVMOption = "jvm-option"

var unrecognizedVM = regexp.MustCompile(`Unrecognized VM option '([^']+)'|Unrecognized option: (\S+)`)

// detectJVMOption reads the JVM's own output ("Unrecognized VM option
// 'X'", "Error: Could not create the Java Virtual Machine.") and names
// where the option is set: jvm.options, jvm.options.d/*.options, or the
// unit's OPENSEARCH_JAVA_OPTS.
func detectJVMOption(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Unrecognized VM option", "Unrecognized option: ")
	if i < 0 {
		return Finding{}, false
	}
	m := unrecognizedVM.FindStringSubmatch(line)
	if m == nil {
		return Finding{}, false
	}
	opt := m[1] + m[2]
	f := Finding{Kind: KindJVMOption, at: i, Evidence: []string{line}}
	if j, l := ev.find("Could not create the Java Virtual Machine"); j >= 0 {
		f.Evidence = append(f.Evidence, l)
	}
	var where []string
	if ev.Config != nil && ev.Config.Indexer.ConfigDir != "" {
		files := []string{filepath.Join(ev.Config.Indexer.ConfigDir, "jvm.options")}
		if more, err := filepath.Glob(ev.path(filepath.Join(ev.Config.Indexer.ConfigDir, "jvm.options.d", "*.options"))); err == nil {
			for _, m := range more {
				files = append(files, strings.TrimPrefix(m, ev.Host.Root))
			}
		}
		for _, file := range files {
			if n := lineContaining(ev.path(file), strings.TrimLeft(opt, "-+")); n > 0 {
				where = append(where, fmt.Sprintf("%s:%d", file, n))
			}
		}
	}
	// the unit's Environment=OPENSEARCH_JAVA_OPTS, in its file or a drop-in
	for _, file := range append([]string{ev.Unit.FragmentPath}, ev.Unit.DropInPaths...) {
		if file == "" {
			continue
		}
		if n := lineContaining(ev.path(file), strings.TrimLeft(opt, "-+")); n > 0 {
			where = append(where, fmt.Sprintf("%s:%d", file, n))
		}
	}
	if len(where) == 0 {
		where = append(where, "OPENSEARCH_JAVA_OPTS (the unit's Environment= or a drop-in: systemctl cat "+ev.Unit.Name+")")
	}
	f.Cause = fmt.Sprintf("the JVM refuses the option %s (set in %s) and does not start", opt, strings.Join(where, ", "))
	f.Fix = fmt.Sprintf("remove or correct %s in %s (this JVM does not know it), then %s", opt, strings.Join(where, ", "), start(ev.Component))
	if strings.Contains(strings.Join(where, " "), ".service") {
		f.Fix = fmt.Sprintf("remove or correct %s in %s (this JVM does not know it), then systemctl daemon-reload and %s", opt, strings.Join(where, ", "), start(ev.Component))
	}
	return f, true
}

func lineContaining(file, s string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for n, l := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(l); !strings.HasPrefix(t, "#") && strings.Contains(t, s) {
			return n + 1
		}
	}
	return 0
}

// ---- the unit's own ExecStart ---------------------------------------------------------

// KindExecFailed is a unit whose ExecStart systemd could not execute (exit
// status 203/EXEC): the component never ran, its logs hold only earlier runs.
const KindExecFailed = "exec-failed"

// detectExecFailed names the unit file or drop-in that sets the ExecStart
// systemd could not run.
func detectExecFailed(_ context.Context, ev *Evidence) (Finding, bool) {
	st := ev.Unit
	if st.Result != "exit-code" || st.ExecMainStatus != 203 {
		return Finding{}, false
	}
	where := ev.unitLines(append([]string{st.FragmentPath}, st.DropInPaths...), func(t string) bool {
		return strings.HasPrefix(t, "ExecStart=") && t != "ExecStart="
	})
	f := Finding{Kind: KindExecFailed, at: len(ev.Lines),
		Cause:    fmt.Sprintf("systemd could not execute %s's ExecStart (exit status 203/EXEC: the program is missing, not executable or not allowed); %s never ran, its logs are of earlier runs", st.Name, ev.Component),
		Evidence: append([]string{"systemd: " + st.Failure()}, where...)}
	if len(where) > 0 {
		last := where[len(where)-1] // the one systemd uses: the last drop-in's
		f.Fix = fmt.Sprintf("correct or remove the ExecStart at %s, then systemctl daemon-reload and %s", last, start(ev.Component))
	} else {
		f.Fix = fmt.Sprintf("correct the unit's ExecStart (systemctl cat %s), then systemctl daemon-reload and %s", st.Name, start(ev.Component))
	}
	return f, true
}

// unitLines are the lines of the unit files (its fragment, its drop-ins) that match, as
// "file:line (text)", in the order systemd reads them (the last one wins).
func (ev *Evidence) unitLines(files []string, match func(trimmed string) bool) []string {
	var where []string
	for _, file := range files {
		if file == "" {
			continue
		}
		b, err := os.ReadFile(ev.path(file))
		if err != nil {
			continue
		}
		for n, l := range strings.Split(string(b), "\n") {
			if t := strings.TrimSpace(l); match(t) {
				where = append(where, fmt.Sprintf("%s:%d (%s)", file, n+1, t))
			}
		}
	}
	return where
}

// ---- the manager API's api.yaml ----------------------------------------------------------

// KindAPIConfig is an api.yaml the manager's API cannot load.
const KindAPIConfig = "api-config"

var apiConfigErr = regexp.MustCompile(`Error loading the API configuration file (\S+): (.*)$`)

func detectAPIConfig(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Error loading the API configuration file")
	if i < 0 {
		return Finding{}, false
	}
	m := apiConfigErr.FindStringSubmatch(strings.TrimSpace(ev.Lines[i]))
	if m == nil {
		return Finding{}, false
	}
	return Finding{Kind: KindAPIConfig, at: i, Evidence: []string{line},
		Cause: fmt.Sprintf("the manager API cannot load its configuration %s: %s", m[1], m[2]),
		Fix:   fmt.Sprintf("fix %s where the error says (%s; it is YAML), then %s", m[1], m[2], start(ev.Component))}, true
}
