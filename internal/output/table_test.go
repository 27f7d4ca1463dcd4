package output

import (
	"bytes"
	"fmt"
	"testing"
)

func TestTable(t *testing.T) {
	red := "\x1b[31mCRIT\x1b[0m"
	tests := []struct {
		name  string
		tty   bool
		width int
		rows  [][]string
		want  string
	}{
		{name: "off a TTY: tab-separated, header as given, cells kept on one line",
			rows: [][]string{{"a", "multi\nline\tcell"}, {"日本語", "x"}},
			want: "id\tvalue\na\tmulti line cell\n日本語\tx\n"},
		{name: "TTY: padded by display width, colour codes ignored", tty: true,
			rows: [][]string{{"日本語", "x"}, {red, "y"}, {"ab", "z"}},
			want: "ID      VALUE\n日本語  x\n" + red + "    y\nab      z\n"},
		{name: "TTY: cut to the terminal's width, widest column first", tty: true, width: 24,
			rows: [][]string{{"1", "a long summary that does not fit"}, {"2", "short"}},
			want: "ID  VALUE\n1   a long summary that…\n2   short\n"},
		{name: "TTY: a column is never cut below eight cells", tty: true, width: 12,
			rows: [][]string{{"identifier-long", "summary-long"}},
			want: "ID        VALUE\nidentif…  summary…\n"},
		{name: "TTY: wide characters cut by display width", tty: true, width: 12,
			rows: [][]string{{"1", "日本語日本語日本語"}},
			want: "ID  VALUE\n1   日本語…\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tb := NewTable(&b, tt.tty, "id", "value").SetWidth(tt.width)
			for _, r := range tt.rows {
				tb.Row(r...)
			}
			if err := tb.Render(); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

func TestTableWriter(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var b bytes.Buffer
		tb := NewTable(&b, tty)
		fmt.Fprintf(tb, "snapshot\t%s\n", "s1")
		fmt.Fprintln(tb)
		fmt.Fprint(tb, "COMPONENT\tSTATE\nindexer\tactive/running") // no final newline
		if err := tb.Render(); err != nil {
			t.Fatal(err)
		}
		want := "snapshot\ts1\n\nCOMPONENT\tSTATE\nindexer\tactive/running\n"
		if tty {
			want = "snapshot   s1\n\nCOMPONENT  STATE\nindexer    active/running\n"
		}
		if b.String() != want {
			t.Fatalf("tty=%v: got\n%q\nwant\n%q", tty, b.String(), want)
		}
	}
}

func TestKV(t *testing.T) {
	var b bytes.Buffer
	if err := KV(&b, [2]string{"siemctl", "1.2.3"}, [2]string{"go", "go1.25"}, [2]string{"名前", "x"}); err != nil {
		t.Fatal(err)
	}
	want := "siemctl: 1.2.3\ngo:      go1.25\n名前:    x\n"
	if b.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestJSONLine: one compact line per value, its newline included in the one
// write, and <, > and & as they are (a rule description or a query).
func TestJSONLine(t *testing.T) {
	var w writes
	for _, v := range []any{map[string]any{"rule": map[string]string{"description": "sshd: <invalid> & more"}}, []int{1, 2}} {
		if err := JSONLine(&w, v); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{`{"rule":{"description":"sshd: <invalid> & more"}}` + "\n", "[1,2]\n"}
	if fmt.Sprint(w) != fmt.Sprint(want) {
		t.Fatalf("writes = %q, want %q", w, want)
	}
}

// writes records each Write call.
type writes []string

func (w *writes) Write(p []byte) (int, error) {
	*w = append(*w, string(p))
	return len(p), nil
}
