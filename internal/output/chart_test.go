package output

import (
	"bytes"
	"strings"
	"testing"
)

func TestBarChart(t *testing.T) {
	var b bytes.Buffer
	bars := []Bar{{"a", 0}, {"bb", 1}, {"c", 800}, {"d", 400}}
	if err := BarChart(&b, bars, 40, newPalette(false)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	for i, l := range lines {
		if n := len([]rune(l)); n != 40 {
			t.Errorf("line %d is %d wide, want every line 40 (labels, bars and values aligned): %q", i, n, l)
		}
	}
	full := strings.Count(lines[2], "█")
	if strings.ContainsAny(lines[0], "█▏") || lines[1][4:7] != "▏" || full != 40-2-3-4 || strings.Count(lines[3], "█") != full/2 {
		t.Errorf("bars not to scale:\n%s", b.String())
	}
	// All zero: no bar, no division by zero.
	b.Reset()
	if err := BarChart(&b, []Bar{{"x", 0}}, 30, newPalette(false)); err != nil || strings.ContainsAny(b.String(), "█▏") {
		t.Errorf("all zero: %v %q", err, b.String())
	}
}

func TestTerminalWidth(t *testing.T) {
	s, _, _, _ := Test()
	t.Setenv("COLUMNS", "")
	if w := s.TerminalWidth(); w != 80 {
		t.Errorf("no terminal, no COLUMNS: %d, want 80", w)
	}
	t.Setenv("COLUMNS", "132")
	if w := s.TerminalWidth(); w != 132 {
		t.Errorf("COLUMNS=132: %d", w)
	}
	s.SetWidth(50)
	if w := s.TerminalWidth(); w != 50 {
		t.Errorf("SetWidth(50): %d", w)
	}
}
