package cli

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// plain drops Markdown emphasis and code marks and collapses whitespace.
func plain(s string) string {
	s = strings.NewReplacer("`", "", "**", "").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// helpCodes parses `siemctl help exit-codes`: code → meaning (continuation
// lines joined).
func helpCodes(help string) map[string]string {
	out := map[string]string{}
	entry := regexp.MustCompile(`^  ([0-9]+)\s+(.*)$`)
	last := ""
	for _, l := range strings.Split(help, "\n") {
		if m := entry.FindStringSubmatch(l); m != nil {
			last = m[1]
			out[last] = m[2]
			continue
		}
		if last != "" && strings.HasPrefix(l, "       ") {
			out[last] += " " + strings.TrimSpace(l)
			continue
		}
		last = ""
	}
	return out
}

// TestExitCodesHelpMatchesREADME: the manual's exit-code table (docs/exit-codes.md), its Nagios
// note and its rule for commands that change the stack (docs/commands.md) say what
// `siemctl help exit-codes` says, and both name every code of exit.go.
func TestExitCodesHelpMatchesREADME(t *testing.T) {
	b, err := os.ReadFile("../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(b)
	b, err = os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	row := regexp.MustCompile(`(?m)^\| ([0-9]+) \| (.*) \|$`)
	want := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(sec, -1) {
		want[m[1]] = plain(m[2])
	}
	got := helpCodes(exitCodesHelp)
	for _, c := range []int{ExitOK, ExitFailure, ExitUsage, ExitNoGo, ExitAuth, ExitUnreachable, ExitLocked, ExitNotYourTurn, ExitStillStarting, ExitRolledBack, ExitRollbackFailed, ExitInterrupted} {
		k := strconv.Itoa(c)
		if want[k] == "" || got[k] == "" {
			t.Errorf("exit %s: README %q, help %q", k, want[k], got[k])
			continue
		}
		if plain(got[k]) != want[k] {
			t.Errorf("exit %s differs:\nREADME: %s\nhelp:   %s", k, want[k], plain(got[k]))
		}
	}
	if len(want) != len(got) || len(want) != 12 {
		t.Errorf("README has %d codes, help %d, exit.go 12", len(want), len(got))
	}
	nagios := regexp.MustCompile("(?m)^`?siemctl health`? uses Nagios codes.*$").FindString(sec)
	if nagios == "" || !strings.Contains(plain(exitCodesHelp), plain(nagios)) {
		t.Errorf("Nagios note differs: README %q", nagios)
	}
	i := strings.Index(readme, "**Commands that change the stack**")
	if i < 0 {
		t.Fatal("README lacks the rule for commands that change the stack")
	}
	rule := readme[i:]
	if end := strings.Index(rule, "\n\n"); end >= 0 {
		rule = rule[:end]
	}
	rule = strings.TrimRight(rule, "\n")
	if !strings.Contains(plain(exitCodesHelp), plain(rule)) {
		t.Errorf("the change rule differs:\nREADME: %s\nhelp:   %s", plain(rule), plain(exitCodesHelp))
	}
}
