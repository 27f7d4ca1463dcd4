// Package output owns siemctl's terminal I/O: streams with per-stream TTY
// detection, colour only when allowed, the one table printer (Table:
// display-width aware, cut to the terminal, tab-separated off a TTY; KV),
// JSON, charts, and the presentation helpers every command shares (Bytes,
// Duration, Ago, Dash).
//
// Data goes to Out (stdout); prompts, warnings and progress go to ErrOut.
package output

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
)

// IOStreams are the three standard streams plus what we know about them.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	inTTY, outTTY, errTTY bool
	noColor, forceColor   bool
	width                 int // 0: ask the terminal (TerminalWidth)
}

// System returns the process's streams, with colour as the environment asks (FromEnv).
func System() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	s.inTTY = isatty.IsTerminal(os.Stdin.Fd())
	s.outTTY = isatty.IsTerminal(os.Stdout.Fd())
	s.errTTY = isatty.IsTerminal(os.Stderr.Fd())
	s.ColorFromEnv(os.Getenv)
	return s
}

// ColorFromEnv applies the colour conventions of the environment: NO_COLOR set to a non-empty
// value (no-color.org) or TERM=dumb turns colour off; CLICOLOR_FORCE set to anything but "" or
// "0" turns it on even off a terminal (a pager, CI logs). NO_COLOR wins over CLICOLOR_FORCE, and
// --no-color (DisableColor) over both.
func (s *IOStreams) ColorFromEnv(getenv func(string) string) {
	s.noColor = getenv("NO_COLOR") != "" || getenv("TERM") == "dumb"
	f := getenv("CLICOLOR_FORCE")
	s.forceColor = !s.noColor && f != "" && f != "0"
}

// Test returns streams backed by buffers, no TTY.
func Test() (s *IOStreams, in *bytes.Buffer, out *bytes.Buffer, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SetTTY marks the streams as terminals (tests).
func (s *IOStreams) SetTTY(in, out, errOut bool) { s.inTTY, s.outTTY, s.errTTY = in, out, errOut }

// DisableColor turns colour off (--no-color), whatever the environment says.
func (s *IOStreams) DisableColor() { s.noColor, s.forceColor = true, false }

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.outTTY }

// IsStderrTTY reports whether stderr is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// CanPrompt reports whether the user can answer a question.
func (s *IOStreams) CanPrompt() bool { return s.inTTY && s.errTTY }

// ColorEnabled reports whether stdout may carry colour.
func (s *IOStreams) ColorEnabled() bool { return (s.outTTY || s.forceColor) && !s.noColor }

// Colors returns a palette for stdout.
func (s *IOStreams) Colors() *Palette { return newPalette(s.ColorEnabled()) }

// ErrColors returns a palette for stderr.
func (s *IOStreams) ErrColors() *Palette { return newPalette((s.errTTY || s.forceColor) && !s.noColor) }

// Palette applies colours when enabled and is the identity otherwise.
type Palette struct{ enabled bool }

func newPalette(enabled bool) *Palette { return &Palette{enabled: enabled} }

func (p *Palette) paint(attrs []color.Attribute, s string) string {
	if !p.enabled {
		return s
	}
	c := color.New(attrs...)
	c.EnableColor()
	return c.Sprint(s)
}

func (p *Palette) Green(s string) string  { return p.paint([]color.Attribute{color.FgGreen}, s) }
func (p *Palette) Yellow(s string) string { return p.paint([]color.Attribute{color.FgYellow}, s) }
func (p *Palette) Red(s string) string    { return p.paint([]color.Attribute{color.FgRed, color.Bold}, s) }
func (p *Palette) Gray(s string) string   { return p.paint([]color.Attribute{color.FgHiBlack}, s) }
func (p *Palette) Bold(s string) string   { return p.paint([]color.Attribute{color.Bold}, s) }

// Status colours a status word: OK green, WARN yellow, CRIT red, other grey.
func (p *Palette) Status(s string) string {
	switch strings.ToUpper(s) {
	case "OK", "GO", "DONE", "PASS":
		return p.Green(s)
	case "WARN", "WARNING", "SKIPPED":
		return p.Yellow(s)
	case "CRIT", "CRITICAL", "NO-GO", "FAILED", "FAIL":
		return p.Red(s)
	default:
		return p.Gray(s)
	}
}

// Outcome is how an action ended, as a coloured status word: OK when it did
// what it should, FAILED when it failed, SKIPPED when it was not done.
func (p *Palette) Outcome(ok, failed bool) string {
	switch {
	case ok:
		return p.Status("OK")
	case failed:
		return p.Status("FAILED")
	}
	return p.Status("SKIPPED")
}

// ErrNoTTY is returned by Confirm when nobody can answer and --yes was not given.
var ErrNoTTY = errors.New("confirmation needed but stdin is not a terminal; pass --yes to proceed")

// ErrDeclined is returned by Confirm when the user says no.
var ErrDeclined = errors.New("cancelled by the user")

// Confirm asks a yes/no question on stderr. yes short-circuits it.
func (s *IOStreams) Confirm(question string, yes bool) error {
	if yes {
		return nil
	}
	if !s.CanPrompt() {
		return ErrNoTTY
	}
	fmt.Fprintf(s.ErrOut, "%s [y/N] ", question)
	line, err := bufio.NewReader(s.In).ReadString('\n')
	if err != nil && line == "" {
		return ErrDeclined
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return ErrDeclined
}
