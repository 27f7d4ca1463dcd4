package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Table prints rows: aligned columns on a TTY, tab-separated lines otherwise
// (stable for scripts). Cells may carry colour codes; alignment ignores them.
type Table struct {
	w      io.Writer
	tty    bool
	header []string
	rows   [][]string
}

// NewTable returns a table writing to w.
func NewTable(w io.Writer, tty bool, header ...string) *Table {
	return &Table{w: w, tty: tty, header: header}
}

// Row adds a row.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table.
func (t *Table) Render() error {
	if !t.tty {
		var b strings.Builder
		if len(t.header) > 0 {
			b.WriteString(strings.Join(t.header, "\t") + "\n")
		}
		for _, r := range t.rows {
			b.WriteString(strings.Join(r, "\t") + "\n")
		}
		_, err := io.WriteString(t.w, b.String())
		return err
	}
	// Pad by visible width so ANSI colour codes do not break alignment.
	all := t.rows
	if len(t.header) > 0 {
		all = append([][]string{t.header}, t.rows...)
	}
	widths := map[int]int{}
	for _, r := range all {
		for i, c := range r {
			if w := visibleLen(c); w > widths[i] {
				widths[i] = w
			}
		}
	}
	var b strings.Builder
	for ri, r := range all {
		for i, c := range r {
			if ri == 0 && len(t.header) > 0 {
				c = strings.ToUpper(c)
			}
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-visibleLen(c)+2))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}

func visibleLen(s string) int {
	n, inEsc := 0, false
	for _, r := range s {
		switch {
		case r == '\x1b':
			inEsc = true
		case inEsc && r == 'm':
			inEsc = false
		case !inEsc:
			n++
		}
	}
	if n == 0 {
		return utf8.RuneCountInString("")
	}
	return n
}

// KV prints "key: value" lines aligned.
func KV(w io.Writer, pairs ...[2]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for _, p := range pairs {
		fmt.Fprintf(tw, "%s:\t%s\n", p[0], p[1])
	}
	return tw.Flush()
}

// JSON writes v as indented JSON with a trailing newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
