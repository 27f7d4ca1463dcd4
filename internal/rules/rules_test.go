package rules

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/manager"
)

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const goodRules = `<?xml version="1.0"?>
<!-- Local rules -->
<var name="BAD_WORDS">failure|error</var>
<group name="local,syslog,sshd,">
  <rule id="100001" level="5">
    <if_sid>5716</if_sid>
    <srcip>1.1.1.1</srcip>
    <description>sshd: authentication failed from IP 1.1.1.1.</description>
  </rule>
  <rule id="100002" level="10">
    <if_matched_sid>100001</if_matched_sid>
    <description>repeated</description>
  </rule>
</group>
<group name="web,">
  <rule id="100010" level="3">
    <if_sid>100001, 100002</if_sid>
    <match>a &amp; b</match>
  </rule>
</group>
`

const goodDecoders = `<decoder name="myapp">
  <program_name>myapp</program_name>
</decoder>
<decoder name="myapp-login">
  <parent>myapp</parent>
  <regex>user (\S+) from (\S+) port (\d+)</regex>
  <order>srcuser, srcip, srcport</order>
</decoder>
<decoder name="myapp-login">
  <parent>myapp</parent>
  <regex type="pcre2">(?:ok|ko) (?&lt;user&gt;[a-z(]+) (?=x)(\d+)</regex>
  <order>user,id</order>
</decoder>
<decoder name="sshd-extra">
  <parent>sshd</parent>
  <regex offset="after_parent">^extra (\w+)</regex>
  <order>extra_data</order>
</decoder>
`

func TestCheckGood(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rules/local_rules.xml", goodRules)
	write(t, dir, "decoders/local_decoder.xml", goodDecoders)
	rep, err := Check(Options{Dir: dir, StockDecoders: map[string]bool{"sshd": true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("problems in good files: %v", rep.Problems)
	}
	if rep.Rules != 3 || rep.Decoders != 4 || len(rep.Files) != 2 {
		t.Errorf("counts: %+v", rep)
	}
}

func TestCheckProblems(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // "file:line: severity: substring"
	}{
		{"not well-formed", map[string]string{"rules/a.xml": "<group name=\"x\">\n  <rule id=\"100001\" level=\"3\">\n  </rul>\n</group>\n"},
			[]string{"rules/a.xml:3: error: not well-formed XML"}},
		{"unclosed at end", map[string]string{"rules/a.xml": "<group name=\"x\">\n  <rule id=\"100001\" level=\"3\"></rule>\n"},
			[]string{"rules/a.xml:3: error: not well-formed XML: element <group> closed by the end of the file"}},
		{"stock id and duplicates", map[string]string{
			"rules/a.xml": "<group name=\"x\">\n<rule id=\"5710\" level=\"3\"/>\n<rule id=\"100001\" level=\"3\"/>\n</group>\n",
			"rules/b.xml": "<group name=\"y\">\n\n<rule id=\"100001\" level=\"3\"/>\n<rule id=\"5716\" level=\"5\" overwrite=\"yes\"/>\n</group>\n"},
			[]string{"rules/a.xml:2: error: rule id 5710 is below 100000", "rules/b.xml:3: error: rule id 100001 is already defined at rules/a.xml:3"}},
		{"bad ids and levels", map[string]string{"rules/a.xml": "<group name=\"x\">\n<rule id=\"abc\" level=\"3\"/>\n<rule level=\"3\"/>\n<rule id=\"100005\" level=\"17\"/>\n<rule id=\"100006\"/>\n</group>"},
			[]string{"rules/a.xml:2: error: rule id \"abc\" is not a number", "rules/a.xml:3: error: <rule> without an id",
				"rules/a.xml:4: error: rule 100005: level \"17\"", "rules/a.xml:5: error: rule 100006 has no level"}},
		{"missing if_sid targets", map[string]string{"rules/a.xml": "<group name=\"x\">\n<rule id=\"100001\" level=\"3\">\n<if_sid>100099,5716</if_sid>\n</rule>\n<rule id=\"100002\" level=\"3\">\n<if_matched_sid>1x</if_matched_sid>\n</rule>\n</group>"},
			[]string{"rules/a.xml:3: error: rule 100001: <if_sid> refers to rule 100099", "rules/a.xml:6: error: rule 100002: <if_matched_sid> \"1x\" is not a rule id"}},
		{"wrong elements", map[string]string{"rules/a.xml": "<rule id=\"100001\" level=\"3\"/>\n<group name=\"x\"><decoder name=\"d\"/></group>"},
			[]string{"rules/a.xml:1: error: unexpected top-level <rule>", "rules/a.xml:2: error: unexpected <decoder> in <group>"}},
		{"decoder parent and order", map[string]string{"decoders/d.xml": "<decoder name=\"a\">\n<parent>nosuch</parent>\n<regex>(\\S+) (\\S+) \\(literal\\)</regex>\n<order>one</order>\n</decoder>\n<decoder name=\"b\">\n<regex type=\"pcre2\">[(]x(</regex>\n</decoder>\n<decoder>\n</decoder>"},
			[]string{"decoders/d.xml:2: error: decoder \"a\": parent \"nosuch\" is not defined", "decoders/d.xml:4: error: decoder \"a\": <order> names 1 fields but the <regex> captures 2 groups",
				"decoders/d.xml:7: error: decoder \"b\": <regex>: unbalanced '('", "decoders/d.xml:9: error: <decoder> without a name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, c := range tt.files {
				write(t, dir, rel, c)
			}
			rep, err := Check(Options{Dir: dir, StockDecoders: map[string]bool{"sshd": true}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d: %q, want prefix %q", i, got[i], w)
				}
			}
			if rep.Errors() == 0 {
				t.Error("no errors counted")
			}
		})
	}
}

func TestStockDecoders(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "decoders/d.xml", "<decoder name=\"a\"><parent>sudo</parent></decoder>\n<decoder name=\"b\"><parent>exotic</parent></decoder>")
	// Built-in list: a known parent passes, an unknown one is only a warning.
	rep, _ := Check(Options{Dir: dir})
	if len(rep.Problems) != 1 || rep.Problems[0].Severity != Warning || rep.Errors() != 0 {
		t.Errorf("built-in stock list: %v", rep.Problems)
	}
	// The real stock ruleset: the unknown parent is an error.
	stock := t.TempDir()
	write(t, stock, "0310-ssh_decoders.xml", "<decoder name=\"sudo\"><program_name>sudo</program_name></decoder>")
	rep, _ = Check(Options{Dir: dir, StockDecoderDir: stock})
	if len(rep.Problems) != 1 || rep.Problems[0].Severity != Error {
		t.Errorf("stock dir: %v", rep.Problems)
	}
}

func TestCheckMissingDir(t *testing.T) {
	if _, err := Check(Options{Dir: filepath.Join(t.TempDir(), "nope")}); err == nil {
		t.Error("missing dir: want an error")
	}
}

func TestCaptureGroups(t *testing.T) {
	tests := []struct {
		expr, typ string
		want      int
		err       bool
	}{
		{`(\S+) (\d+)`, "", 2, false},
		{`\(x\) (\w+)`, "", 1, false},
		{`(?:a|b)(x)`, "pcre2", 1, false},
		{`(?<n>x)(?P<m>y)(?'o'z)`, "pcre2", 3, false},
		{`(?=a)(?!b)(?<=c)(?<!d)(*UTF)`, "PCRE2", 0, false},
		{`[()]+(x)`, "pcre2", 1, false},
		{`[]()](x)`, "pcre2", 1, false},
		{`(x`, "", 0, true},
		{`x)`, "pcre2", 0, true},
		{`[abc`, "pcre2", 0, true},
	}
	for _, tt := range tests {
		n, err := captureGroups(tt.expr, tt.typ)
		if (err != nil) != tt.err || n != tt.want {
			t.Errorf("%s (%s): %d %v, want %d err=%v", tt.expr, tt.typ, n, err, tt.want, tt.err)
		}
	}
}

type fakeAPI struct {
	v   manager.ConfigValidation
	err error
}

func (f fakeAPI) ValidateConfig(context.Context) (manager.ConfigValidation, error) { return f.v, f.err }

type fakeTools struct {
	r   manager.CheckResult
	err error
}

func (f fakeTools) ControlCheck(context.Context) (manager.CheckResult, error) { return f.r, f.err }

func TestManagerCheck(t *testing.T) {
	down := errors.New("connection refused")
	tests := []struct {
		name   string
		api    ConfigValidator
		tools  ControlChecker
		state  string
		source string
		errs   string
	}{
		{"api ok", fakeAPI{v: manager.ConfigValidation{OK: true}}, nil, ManagerOK, "api", ""},
		{"api invalid", fakeAPI{v: manager.ConfigValidation{Errors: []string{"(1230): Invalid element"}}}, nil, ManagerInvalid, "api", "(1230)"},
		{"api down, tool ok", fakeAPI{err: down}, fakeTools{r: manager.CheckResult{OK: true}}, ManagerOK, "control check", ""},
		{"api down, tool invalid", fakeAPI{err: down}, fakeTools{r: manager.CheckResult{Problems: []manager.LogLine{{Tag: "siem-analysisd", Level: "ERROR", Message: "bad"}}}}, ManagerInvalid, "control check", "bad"},
		{"nothing works", fakeAPI{err: down}, fakeTools{err: manager.ErrUnsupported}, ManagerNotRun, "", ""},
		{"nothing configured", nil, nil, ManagerNotRun, "", ""},
	}
	for _, tt := range tests {
		r := ManagerCheck(context.Background(), tt.api, tt.tools)
		if r.State != tt.state || r.Source != tt.source || !strings.Contains(strings.Join(r.Errors, ";"), tt.errs) {
			t.Errorf("%s: %+v", tt.name, r)
		}
		if r.State == ManagerNotRun && r.Detail == "" {
			t.Errorf("%s: no detail", tt.name)
		}
	}
}
