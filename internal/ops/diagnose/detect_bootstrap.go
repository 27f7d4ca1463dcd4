package diagnose

import (
	"context"
	"strings"
)

// ---- bootstrap checks ----------------------------------------------------------

func detectBootstrap(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("bootstrap checks failed")
	if i < 0 {
		return Finding{}, false
	}
	f := Finding{Evidence: []string{line}, at: i}
	var checks []string
	for _, l := range ev.Lines[i+1:] {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "bootstrap check failure") || strings.HasPrefix(t, "[") && strings.Contains(t, "]: ") && !osStamp.MatchString(t) {
			checks = append(checks, t)
		}
	}
	f.Evidence = append(f.Evidence, checks...)
	f.Cause = "OpenSearch refused to start: " + strings.TrimPrefix(strings.TrimSpace(line[strings.Index(line, "ERROR"):]), "ERROR: ")
	if len(checks) > 0 {
		f.Cause += ": " + checks[0]
	}
	f.Fix = "correct each failed bootstrap check as its line says (the setting in " + ev.indexerYAMLFile() + ", a system limit or a sysctl), then " + start(ev.Component)
	return f, true
}
