package runbook

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

const good = `name: demo
description: a demo
steps:
  - id: preflight/health
    kind: gate.cluster_health
    with: {status: yellow}
    timeout: 5m
  - id: indexer/allocation
    kind: indexer.allocation
    with: {value: primaries}
    undo: {kind: indexer.allocation, with: {value: all}}
    needs: [preflight/health]
    on_fail: rollback
    retries: 2
  - id: final/no-trace
    kind: gate.no_trace
    always: true
`

func TestParseGood(t *testing.T) {
	rb, err := Parse([]byte(good), "demo.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if rb.Name != "demo" || len(rb.Steps) != 3 {
		t.Fatalf("got %+v", rb)
	}
	s := rb.Steps[1]
	if s.Line != 8 || s.Undo == nil || s.Undo.With["value"] != "all" || s.FailMode() != OnFailRollback || s.Retries != 2 {
		t.Errorf("step 2 = %+v", s)
	}
	if rb.Steps[0].Timeout.D() != 5*time.Minute || rb.Steps[0].FailMode() != OnFailAbort {
		t.Errorf("step 1 = %+v", rb.Steps[0])
	}
	if !rb.Steps[2].Always || rb.Hash != Hash([]byte(good)) || len(rb.Hash) != 64 {
		t.Errorf("always/hash wrong: %+v %s", rb.Steps[2], rb.Hash)
	}
}

func TestRead(t *testing.T) {
	fsys := fstest.MapFS{"x.yaml": {Data: []byte(good)}, "big.yaml": {Data: make([]byte, MaxSize+10)}}
	if b, err := Read(fsys, "x.yaml"); err != nil || string(b) != good {
		t.Fatalf("%q %v", b, err)
	}
	if b, err := Read(fsys, "big.yaml"); err != nil || len(b) != MaxSize+1 {
		t.Fatalf("a file past MaxSize: %d bytes read, %v", len(b), err)
	}
	if _, err := Read(fsys, "missing.yaml"); err == nil || !strings.Contains(err.Error(), "open runbook") {
		t.Fatalf("want an error for a missing file: %v", err)
	}
}

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings, each must appear; count must match
	}{
		{"empty", "", []string{"empty runbook"}},
		{"syntax", "name: [", []string{"did not find expected"}},
		{"unknown field", "name: x\nsteps:\n  - id: a\n    kind: a.b\n    tiemout: 5m\n", []string{"x.yaml:5: field tiemout not found"}},
		{"unknown top field", "name: x\nstep: []\n", []string{"field step not found", "no steps"}},
		{"bad duration", "name: x\nsteps:\n  - {id: a, kind: a.b, timeout: soon}\n", []string{`x.yaml:3: bad duration "soon"`}},
		{"everything at once", `name: ""
steps:
  - {id: Bad_ID, kind: nodots}
  - {id: a, kind: a.b, on_fail: retry, retries: -1}
  - {id: a, kind: a.c, needs: [later, ghost, a]}
  - {id: later, kind: a.d, with: {version: "{{target}}"}}
  - {id: fin, kind: a.e, always: true, on_fail: rollback, undo: {kind: a.f}}
  - {id: after, kind: a.g}
`, []string{
			"runbook has no name",
			"x.yaml:3: step Bad_ID: id must be",
			`x.yaml:3: step Bad_ID: kind "nodots"`,
			"x.yaml:4: step a: on_fail must be",
			"x.yaml:4: step a: retries must not be negative",
			"x.yaml:5: step a: duplicate id (first at line 4)",
			"needs later, which comes later",
			"needs ghost, which is not a step",
			"x.yaml:6: step later: with.version: \"{{target}}\" looks like a template",
			"cannot have on_fail: rollback",
			"always-step cannot have an undo",
			"x.yaml:8: step after: comes after an always-step",
		}},
		{"two documents", "name: x\nsteps: [{id: a, kind: a.b}]\n---\nname: y\n", []string{"more than one YAML document"}},
		{"undo without kind", "name: x\nsteps: [{id: a, kind: a.b, undo: {with: {x: 1}}}]\n", []string{"undo: no kind"}},
		{"phases", `name: x
phases:
  - {name: a, steps: [one, ghost]}
  - {name: a, steps: [one]}
  - {steps: []}
steps:
  - {id: one/x, kind: a.b}
  - {id: two/x, kind: a.b}
`, []string{
			"phase a: subtree ghost holds no step of this runbook",
			"phase a: duplicate name",
			"phase a: subtree one is already phase a's",
			"phase 3 has no name",
			"phase  selects no steps",
			"step two/x is in no phase: add its subtree two to one",
		}},
		{"always-step as the point of no return", "name: x\nsteps: [{id: a, kind: a.b}, {id: fin, kind: a.e, always: true, point_of_no_return: true}]\n", []string{"x.yaml:2: step fin: an always-step runs after the outcome is decided; it cannot be a point_of_no_return"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "x.yaml")
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("want Problems, got %v", err)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("missing %q in:\n%s", w, msg)
				}
			}
			// "needs a" (itself) is reported too in the big case; count loosely.
			if len(ps) < len(tt.want) {
				t.Errorf("got %d problems, want at least %d:\n%s", len(ps), len(tt.want), msg)
			}
		})
	}
}

// TestPastPointOfNoReturn: the marked step and the later steps of its subtree, not the steps
// before it nor those of the next subtree.
func TestPastPointOfNoReturn(t *testing.T) {
	rb, err := Parse([]byte(`name: x
steps:
  - {id: indexer/stop, kind: a.b}
  - {id: indexer/start, kind: a.b, point_of_no_return: true}
  - {id: indexer/rejoined, kind: a.b}
  - {id: manager/stop, kind: a.b}
  - {id: manager/start, kind: a.b}
  - {id: finally/no-trace, kind: a.b, always: true}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rb.PastPointOfNoReturn(), " "); got != "indexer/start indexer/rejoined" {
		t.Errorf("past the point of no return: %q", got)
	}
	rb.Steps[1].PointOfNoReturn = false
	if got := rb.PastPointOfNoReturn(); len(got) != 0 {
		t.Errorf("no mark: %q", got)
	}
}

func TestCovers(t *testing.T) {
	s := Step{ID: "indexer/upgrade/install"}
	for sel, want := range map[string]bool{
		"indexer": true, "indexer/": true, "indexer/upgrade": true, "indexer/upgrade/install": true,
		"index": false, "indexer/up": false, "manager": false,
	} {
		if got := s.Covers(sel); got != want {
			t.Errorf("Covers(%q) = %v, want %v", sel, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("name: x\nsteps: [{id: a, kind: a.b, with: {a: [1, {b: c}]}, timeout: 1s}]\n"))
	f.Add([]byte("name: &a x\nsteps: *a\n"))
	f.Add([]byte("steps:\n  - id: a\n    undo: {kind: x.y, timeout: -5s}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rb, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("error is not Problems: %v", err)
			}
			if rb != nil {
				t.Fatal("runbook returned with an error")
			}
			return
		}
		// A runbook that parses is structurally sound.
		if len(Check(rb)) != 0 || rb.Name == "" || len(rb.Steps) == 0 {
			t.Fatalf("accepted an invalid runbook: %+v", rb)
		}
		ids := map[string]bool{}
		for _, s := range rb.Steps {
			if ids[s.ID] {
				t.Fatalf("duplicate id accepted: %s", s.ID)
			}
			ids[s.ID] = true
		}
	})
}
