package rules

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestSeededDefects: each directory of testdata/seeded holds small local
// files of our own with one kind of defect analysisd reports (its want file
// lists "file:line severity code", code "-" where analysisd has none), checked
// against a small stand-in stock ruleset (testdata/seeded/_stock). Every
// defect must be caught with its severity, code and line, and nothing else
// reported.
func TestSeededDefects(t *testing.T) {
	base := filepath.Join("testdata", "seeded")
	ents, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	missed, total := 0, 0
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		dir := filepath.Join(base, e.Name())
		want := readWant(t, filepath.Join(dir, "want"))
		total += len(want)
		t.Run(e.Name(), func(t *testing.T) {
			rep, err := Check(Options{Dir: dir, StockDir: filepath.Join(base, "_stock")})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rep.Problems {
				code := p.Code
				if code == "" {
					code = "-"
				}
				got = append(got, fmt.Sprintf("%s:%d %s %s", p.File, p.Line, p.Severity, code))
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				for _, w := range want {
					if !slices.Contains(got, w) {
						missed++
					}
				}
				t.Errorf("got:\n%s\nwant:\n%s\nproblems: %v", strings.Join(got, "\n"), strings.Join(want, "\n"), rep.Problems)
			}
			errs := 0
			for _, w := range want {
				if strings.Contains(w, " error ") {
					errs++
				}
			}
			if (rep.Errors() > 0) != (errs > 0) {
				t.Errorf("errors %d, want %d", rep.Errors(), errs)
			}
		})
	}
	t.Logf("seeded defects: %d, missed: %d", total, missed)
}

func readWant(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func TestParseXMLDialect(t *testing.T) {
	tests := []struct {
		name, in string
		err      string // substring of the error, "" for none
		line     int
		check    func(t *testing.T, top []*node)
	}{
		{name: "several roots, comments with --, bare &, no entities",
			in: "<!-- a -- b -->\n<a x='1'>R&amp;D & \\<b></a>\n<c/>\n<d y=\"2\" />",
			check: func(t *testing.T, top []*node) {
				if len(top) != 3 || top[0].text != "R&amp;D & \\<b>" || top[1].name != "c" || top[2].line != 4 {
					t.Errorf("%+v %+v %+v", top[0], top[1], top[2])
				}
				if v, _ := top[0].attr("x"); v != "1" {
					t.Errorf("attr %q", v)
				}
			}},
		{name: "children and lines", in: "<g name=\"x\">\n  <r id=\"1\">\n    <m>t</m>\n  </r>\n</g>\n",
			check: func(t *testing.T, top []*node) {
				r := top[0].children[0]
				if r.line != 2 || r.children[0].text != "t" || r.children[0].line != 3 {
					t.Errorf("%+v", r)
				}
			}},
		{name: "xml declaration", in: "<?xml version=\"1.0\"?>\n<a/>", err: "Bad attribute closing", line: 1},
		{name: "mismatched close", in: "<a>\n<b>x</c>\n</a>", err: "Element 'b' not closed", line: 2},
		{name: "unclosed at end", in: "<a>\n<b>x</b>\n", err: "End of file", line: 3},
		{name: "close without open", in: "</a>", err: "Element not opened", line: 1},
		{name: "comment not closed", in: "<a/>\n<!-- x", err: "Comment not closed", line: 2},
		{name: "attribute without quotes", in: "<a x=1/>", err: "not followed by", line: 1},
		{name: "duplicate attribute", in: "<a x='1' x='2'/>", err: "already defined", line: 1},
		{name: "variables", in: "<var name=\"VAR\">v1|v2</var>\n<a k=\"$VAR\">x $var, $(dyn) $</a>",
			check: func(t *testing.T, top []*node) {
				if len(top) != 1 || top[0].text != "x v1|v2, $(dyn) $" || top[0].attrs[0].value != "v1|v2" {
					t.Errorf("%+v", top)
				}
			}},
		{name: "unknown variable", in: "<var name=\"V\">1</var>\n<a>$WW</a>", err: "Unknown variable: WW", line: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top, err := parseXML([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || errLine(err) != tt.line {
					t.Fatalf("err %v (line %d), want %q at line %d", err, errLine(err), tt.err, tt.line)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, top)
		})
	}
}

func TestCompileExpr(t *testing.T) {
	tests := []struct {
		expr, typ string
		captures  int
		known     bool
		err       bool
	}{
		{`(\S+) (\d+)`, expOSRegex, 2, true, false},
		{`^a (\w+)$|^b (\w+) (\d+)$`, expOSRegex, 2, true, false}, // the widest alternative, not the sum
		{`\(x\) (\w+) \.\p\t\$\|\<\\`, expOSRegex, 1, true, false},
		{`(a|b)`, expOSRegex, 0, false, true},
		{`((a))`, expOSRegex, 0, false, true},
		{`\bx`, expOSRegex, 0, false, true},
		{`x\`, expOSRegex, 0, false, true},
		{`(x`, expOSRegex, 0, false, true},
		{`x)`, expOSRegex, 0, false, true},
		{`(?:a|b)(x)(?P<n>y)`, expPCRE2, 2, true, false},
		{`(?=a)(?!b)(?<=c)(?<!d)(x)`, expPCRE2, 1, true, false},
		{`(*UTF)\N{U+202E}`, expPCRE2, 0, true, false},
		{`a*+(?>b)\1`, expPCRE2, 0, true, false},
		{`(?|(a)|(b))`, expPCRE2, 2, false, false},
		{`(x`, expPCRE2, 0, false, true},
		{`[abc`, expPCRE2, 0, false, true},
		{`(?=x`, expPCRE2, 0, false, true},
		{`(?&lt;n&gt;x)`, expPCRE2, 0, false, true},
		{`a|b(c`, expOSMatch, 0, true, false},
	}
	for _, tt := range tests {
		info, err := compileExpr(tt.expr, tt.typ)
		if (err != nil) != tt.err {
			t.Errorf("%s (%s): err %v, want error %v", tt.expr, tt.typ, err, tt.err)
			continue
		}
		if err == nil && (info.captures() != tt.captures || info.known != tt.known) {
			t.Errorf("%s (%s): captures %d known %v, want %d %v", tt.expr, tt.typ, info.captures(), info.known, tt.captures, tt.known)
		}
	}
}

func TestCheckStockMissing(t *testing.T) {
	dir := filepath.Join("testdata", "seeded", "clean-dialect")
	rep, err := Check(Options{Dir: dir, StockDir: filepath.Join(t.TempDir(), "nope")})
	if err != nil {
		t.Fatal(err)
	}
	// Without the stock ruleset the stock references cannot be verified:
	// one warning says so, and no false error.
	if rep.Errors() != 0 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "stock ruleset not found") {
		t.Errorf("%v", rep.Problems)
	}
	if _, err := Check(Options{Dir: filepath.Join(t.TempDir(), "nope")}); err == nil {
		t.Error("missing dir: want an error")
	}
}

func TestCheckAsStockAndExclude(t *testing.T) {
	stock := filepath.Join("testdata", "seeded", "_stock")
	rep, err := Check(Options{Dir: stock, AsStock: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || rep.Rules != 6 || rep.Decoders != 3 || rep.Stock != stock {
		t.Errorf("%+v", rep)
	}
	// The copied stock file is fine once the original is excluded.
	dir := filepath.Join("testdata", "seeded", "copied-stock-file-not-excluded")
	rep, err = Check(Options{Dir: dir, StockDir: stock, Exclude: []string{"ruleset/decoders/0100-base_decoders.xml"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("excluded original: %v", rep.Problems)
	}
}

// FuzzParseXML: the parser never panics, and an error always has a line.
func FuzzParseXML(f *testing.F) {
	for _, s := range []string{"<a x='1'>t</a>", "<!-- c -- d --><b/>", "<var name=\"V\">x</var><a>$V $W</a>", "<a>\\<b></a>", "<?xml version=\"1.0\"?>", "<a><b></a>", "</a>", "<a x=\"1\" x='2'/>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if _, err := parseXML([]byte(in)); err != nil && errLine(err) <= 0 {
			t.Errorf("error without a line: %v", err)
		}
	})
}

// <order> and <fts> lists split as analysisd splits them.
func TestFieldNames(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []string
		ok   bool
	}{
		{"srcip, srcport", []string{"srcip", "srcport"}, true},
		{"  user,dstuser extra words", []string{"user", "dstuser"}, true},
		{"srcip", []string{"srcip"}, true},
		{"srcip,,dstip", nil, false},
		{"srcip, ", nil, false},
		{"", nil, false},
	} {
		got, ok := fieldNames(tc.list)
		if ok != tc.ok || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("fieldNames(%q) = %q %v, want %q %v", tc.list, got, ok, tc.want, tc.ok)
		}
	}
}
