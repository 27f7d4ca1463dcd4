package output

import "testing"

func TestColorFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		tty     bool
		noFlag  bool
		wantOut bool
	}{
		{name: "terminal, nothing set", tty: true, wantOut: true},
		{name: "not a terminal", tty: false, wantOut: false},
		{name: "NO_COLOR=1", env: map[string]string{"NO_COLOR": "1"}, tty: true, wantOut: false},
		{name: "NO_COLOR empty is not set", env: map[string]string{"NO_COLOR": ""}, tty: true, wantOut: true},
		{name: "TERM=dumb", env: map[string]string{"TERM": "dumb"}, tty: true, wantOut: false},
		{name: "CLICOLOR_FORCE=1 off a terminal", env: map[string]string{"CLICOLOR_FORCE": "1"}, tty: false, wantOut: true},
		{name: "CLICOLOR_FORCE=0", env: map[string]string{"CLICOLOR_FORCE": "0"}, tty: false, wantOut: false},
		{name: "NO_COLOR wins over CLICOLOR_FORCE", env: map[string]string{"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, tty: true, wantOut: false},
		{name: "--no-color wins over CLICOLOR_FORCE", env: map[string]string{"CLICOLOR_FORCE": "1"}, tty: true, noFlag: true, wantOut: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _, _ := Test()
			s.SetTTY(false, tt.tty, tt.tty)
			s.ColorFromEnv(func(k string) string { return tt.env[k] })
			if tt.noFlag {
				s.DisableColor()
			}
			if got := s.ColorEnabled(); got != tt.wantOut {
				t.Errorf("ColorEnabled = %v, want %v", got, tt.wantOut)
			}
			if got := s.Colors().Red("x") != "x"; got != tt.wantOut {
				t.Errorf("palette paints = %v, want %v", got, tt.wantOut)
			}
			if got := s.ErrColors().Red("x") != "x"; got != tt.wantOut {
				t.Errorf("stderr palette paints = %v, want %v", got, tt.wantOut)
			}
		})
	}
}

// TestOutcome: an action that did its job is OK (green), one that failed
// FAILED (red), one not done SKIPPED (yellow).
func TestOutcome(t *testing.T) {
	s, _, _, _ := Test()
	s.SetTTY(false, true, true)
	s.ColorFromEnv(func(string) string { return "" })
	p := s.Colors()
	for _, tt := range []struct {
		ok, failed bool
		want       string
	}{
		{true, false, p.Green("OK")},
		{false, true, p.Red("FAILED")},
		{false, false, p.Yellow("SKIPPED")},
	} {
		if got := p.Outcome(tt.ok, tt.failed); got != tt.want {
			t.Errorf("Outcome(%v, %v) = %q, want %q", tt.ok, tt.failed, got, tt.want)
		}
	}
	if got := (&Palette{}).Outcome(false, true); got != "FAILED" {
		t.Errorf("without colour: %q, want FAILED", got)
	}
}
