package diagnose

import (
	"context"
	"path/filepath"
)

// ---- manager configuration -----------------------------------------------------

func detectManagerConfig(ctx context.Context, ev *Evidence) (Finding, bool) {
	if ev.ConfigCheck == nil {
		return Finding{}, false
	}
	problems, ok, err := ev.ConfigCheck(ctx)
	if err != nil || ok {
		return Finding{}, false
	}
	f := Finding{Evidence: problems, at: len(ev.Lines)}
	f.Cause = "configuration invalid: " + firstOr(problems, "see the manager's configuration check")
	conf := "ossec.conf"
	if ev.Config != nil {
		conf = filepath.Join(ev.Config.Manager.InstallDir, "etc", "ossec.conf")
	}
	f.Fix = "fix " + conf + " at the reported element and line, then " + start(ev.Component)
	return f, true
}

func firstOr(s []string, d string) string {
	if len(s) == 0 {
		return d
	}
	return s[0]
}
