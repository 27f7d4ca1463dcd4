package output

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-runewidth"
	"golang.org/x/term"
)

// Table is the one table printer of every command: aligned columns on a
// TTY (padded by display width, so wide characters and colour codes do not
// break alignment; cut with "…" to the terminal's width when it is known),
// tab-separated lines otherwise (stable for scripts). Tabs and line breaks
// inside a cell become spaces. Rows come from Row, or from lines written
// to the Table as an io.Writer (cells separated by tabs).
type Table struct {
	w      io.Writer
	tty    bool
	width  int // the terminal's width; 0: no cut
	pad    int // spaces between columns on a TTY
	header []string
	rows   [][]string
	part   []byte // Write: an unfinished line
}

// NewTable returns a table writing to w. On a TTY, when w is the terminal,
// lines are cut to its width.
func NewTable(w io.Writer, tty bool, header ...string) *Table {
	t := &Table{w: w, tty: tty, pad: 2, header: header}
	if f, ok := w.(*os.File); ok && tty {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil && n > 0 {
			t.width = n
		}
	}
	return t
}

// SetWidth sets the width lines are cut to on a TTY (0: no cut).
func (t *Table) SetWidth(n int) *Table {
	t.width = n
	return t
}

// Row adds a row.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Write adds one row per complete line of p, cells separated by tabs.
func (t *Table) Write(p []byte) (int, error) {
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		t.addLine(string(t.part[:i]))
		t.part = t.part[i+1:]
	}
}

func (t *Table) addLine(line string) {
	if line == "" {
		t.rows = append(t.rows, nil)
		return
	}
	t.rows = append(t.rows, strings.Split(line, "\t"))
}

var cellSpace = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ", "\r", " ")

// Render writes the table.
func (t *Table) Render() error {
	if len(t.part) > 0 {
		t.addLine(string(t.part))
		t.part = nil
	}
	all := t.rows
	if len(t.header) > 0 {
		hdr := t.header
		if t.tty {
			hdr = make([]string, len(t.header))
			for i, h := range t.header {
				hdr[i] = strings.ToUpper(h)
			}
		}
		all = append([][]string{hdr}, t.rows...)
	}
	var b strings.Builder
	if !t.tty {
		for _, r := range all {
			for i, c := range r {
				if i > 0 {
					b.WriteByte('\t')
				}
				b.WriteString(cellSpace.Replace(c))
			}
			b.WriteByte('\n')
		}
		_, err := io.WriteString(t.w, b.String())
		return err
	}
	widths := t.columnWidths(all)
	for _, r := range all {
		for i, c := range r {
			c = cellSpace.Replace(c)
			w := visibleLen(c)
			if w > widths[i] {
				c = runewidth.Truncate(StripANSI(c), widths[i], "…")
				w = runewidth.StringWidth(c)
			}
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-w+t.pad))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}

// minCut is the narrowest a column is cut to.
const minCut = 8

// columnWidths is the display width of each column, the widest columns cut
// (never below minCut) until a line fits the table's width.
func (t *Table) columnWidths(all [][]string) []int {
	var widths []int
	for _, r := range all {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], visibleLen(cellSpace.Replace(c)))
		}
	}
	if t.width <= 0 || len(widths) == 0 {
		return widths
	}
	total := t.pad * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	for total > t.width {
		widest := 0
		for i, w := range widths {
			if w > widths[widest] {
				widest = i
			}
		}
		if widths[widest] <= minCut {
			break
		}
		widths[widest]--
		total--
	}
	return widths
}

// visibleLen is the display width of s without its colour codes.
func visibleLen(s string) int { return runewidth.StringWidth(StripANSI(s)) }

// StripANSI is s without its colour codes (SGR escapes, as Palette writes them).
func StripANSI(s string) string {
	if !strings.ContainsRune(s, '\x1b') {
		return s
	}
	var b strings.Builder
	inEsc := false
	for _, r := range s {
		switch {
		case r == '\x1b':
			inEsc = true
		case inEsc && r == 'm':
			inEsc = false
		case !inEsc:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// KV prints "key: value" lines, the values aligned by display width.
func KV(w io.Writer, pairs ...[2]string) error {
	t := &Table{w: w, tty: true, pad: 1}
	for _, p := range pairs {
		t.Row(p[0]+":", p[1])
	}
	return t.Render()
}

// JSON writes v as indented JSON with a trailing newline.
func JSON(w io.Writer, v any) error { return encodeJSON(w, v, "  ") }

// JSONLine writes v as one compact line of JSON with its newline (JSON
// Lines), in one write: a pipe sees each value at once.
func JSONLine(w io.Writer, v any) error { return encodeJSON(w, v, "") }

func encodeJSON(w io.Writer, v any, indent string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
