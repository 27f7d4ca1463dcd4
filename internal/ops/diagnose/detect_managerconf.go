package diagnose

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
)

// ---- manager configuration -----------------------------------------------------

// xmlFileErr is analysisd's "(1226): Error reading XML file 'F'".
var xmlFileErr = regexp.MustCompile(`Error reading XML file '([^']+)'`)

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
	// the file the error names (a rules or decoders file, relative to the
	// install directory), not always ossec.conf
	if m := xmlFileErr.FindStringSubmatch(strings.Join(problems, "\n")); m != nil {
		conf = m[1]
		if ev.Config != nil && !filepath.IsAbs(conf) {
			conf = filepath.Join(ev.Config.Manager.InstallDir, conf)
		}
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
