package output

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"
)

// Bar is one row of a bar chart.
type Bar struct {
	Label string
	Value int64
}

// eighths are the partial blocks that give a bar 1/8-cell precision.
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// BarChart draws horizontal bars scaled to the largest value, each with its label and value, in at
// most width columns. A zero value draws no bar; any value above zero draws at least a sliver, so a
// quiet interval and an empty one look different.
func BarChart(w io.Writer, bars []Bar, width int, p *Palette) error {
	labelW, valueW := 0, 1
	var top int64
	for _, b := range bars {
		labelW = max(labelW, visibleLen(b.Label))
		valueW = max(valueW, len(strconv.FormatInt(b.Value, 10)))
		top = max(top, b.Value)
	}
	room := width - labelW - valueW - 4 // "label  bar  value"
	if room < 10 {
		room = 10
	}
	var sb strings.Builder
	for _, b := range bars {
		cells := 0
		if top > 0 {
			cells = int(b.Value * int64(room) * 8 / top)
		}
		if b.Value > 0 && cells == 0 {
			cells = 1
		}
		bar := strings.Repeat("█", cells/8) + eighths[cells%8]
		if bar != "" {
			bar = p.Green(bar)
		}
		fmt.Fprintf(&sb, "%s%s  %s%s  %*d\n", b.Label, strings.Repeat(" ", labelW-visibleLen(b.Label)),
			bar, strings.Repeat(" ", room-(cells+7)/8), valueW, b.Value)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// TerminalWidth is the width of stdout when it is a terminal, else $COLUMNS, else 80.
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	if f, ok := s.Out.(*os.File); ok && s.outTTY {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// SetWidth fixes the terminal width (tests).
func (s *IOStreams) SetWidth(n int) { s.width = n }
