// Package runbook is the data model of siemctl's runbooks and their strict
// loader: a runbook is an ordered list of steps, each naming a step kind
// (implemented in Go elsewhere) and its parameters. The YAML holds no
// expressions, shell or loops; conditions live in the kinds' Go skip checks.
//
// This package checks everything that can be checked without knowing the
// kinds (shape, ids, order of needs, on_fail values, always-steps at the end).
// Whether a kind exists and its parameters are valid is checked by
// engine.Plan against a registry; both report every problem at once.
package runbook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// OnFail values.
const (
	OnFailAbort    = "abort"
	OnFailRollback = "rollback"
)

// Runbook is one parsed runbook file.
type Runbook struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Steps       []Step `yaml:"steps"`
	// Phases name the parts of the runbook run on their own, each on the hosts it names
	// (cluster-rollback.yaml's --phase); empty: the runbook runs whole.
	Phases []Phase `yaml:"phases"`

	// Source names where the runbook came from (file name), for messages.
	Source string `yaml:"-"`
	// Raw is the exact text it was parsed from; Hash is its sha256 (hex).
	Raw  []byte `yaml:"-"`
	Hash string `yaml:"-"`
}

// Step is one entry of a runbook.
type Step struct {
	// ID is a slash path (preflight/cluster-health); a prefix selects a subtree.
	ID string `yaml:"id"`
	// Kind is a dotted step-kind name registered in Go (units.stop).
	Kind string `yaml:"kind"`
	// With holds the kind's parameters, decoded strictly by the kind.
	With map[string]any `yaml:"with"`
	// Timeout bounds the step (a gate polls until it); 0 means the runner's default.
	Timeout Duration `yaml:"timeout"`
	// Retries is how many times a failed (not pending) attempt is retried.
	Retries int `yaml:"retries"`
	// Needs lists step ids that must come earlier and be selected with it.
	Needs []string `yaml:"needs"`
	// Undo is what puts the step back when a later step fails with on_fail rollback.
	Undo *Action `yaml:"undo"`
	// OnFail is abort (default) or rollback.
	OnFail string `yaml:"on_fail"`
	// Always marks a finally-step: it runs after success, abort and rollback.
	// Always-steps come after every other step.
	Always bool `yaml:"always"`
	// PointOfNoReturn marks the step from which the run can no longer simply be resumed or undone
	// on this host: a no-go at it or at a later step of its subtree (the steps whose id shares its
	// first path segment) rolls the whole deployment back (node.yaml's indexer/start: the node ran
	// the new version, which upgraded its data). See Runbook.PastPointOfNoReturn.
	PointOfNoReturn bool `yaml:"point_of_no_return"`
	// Description is free text for plans.
	Description string `yaml:"description"`

	// Line is the step's line in Source (1-based), 0 if unknown.
	Line int `yaml:"-"`
}

// Phase is a named part of a runbook, run on its own: the step-id subtrees it selects.
type Phase struct {
	Name string `yaml:"name"`
	// Where says on which hosts the phase runs (plans, dry runs).
	Where string `yaml:"where"`
	// Steps are the step-id subtrees (first path segments) the phase selects.
	Steps []string `yaml:"steps"`
}

// PhaseNames are the names of the runbook's phases, in order.
func (rb *Runbook) PhaseNames() []string {
	out := make([]string, len(rb.Phases))
	for i, p := range rb.Phases {
		out[i] = p.Name
	}
	return out
}

// Action is an undo: a kind and its parameters.
type Action struct {
	Kind    string         `yaml:"kind"`
	With    map[string]any `yaml:"with"`
	Timeout Duration       `yaml:"timeout"`
}

// FailMode is OnFail with the default applied.
func (s Step) FailMode() string {
	if s.OnFail == "" {
		return OnFailAbort
	}
	return s.OnFail
}

// Covers reports whether selector id sel selects this step: the step itself
// or a parent path of it ("indexer" covers "indexer/stop").
func (s Step) Covers(sel string) bool {
	sel = strings.TrimSuffix(sel, "/")
	return s.ID == sel || strings.HasPrefix(s.ID, sel+"/")
}

// Duration is a time.Duration written as "90s", "5m" in YAML.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML accepts a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: duration must be a string like 90s or 5m", n.Line)}}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: bad duration %q (want e.g. 90s, 5m)", n.Line, n.Value)}}
	}
	if v < 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: negative duration %q", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Hash returns the hex sha256 of b, the runbook hash recorded in journals.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Problem is one thing wrong with a runbook, located by file and line.
type Problem struct {
	Source string `json:"source"`
	Line   int    `json:"line,omitempty"`
	Step   string `json:"step,omitempty"`
	Msg    string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Source)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Step != "" {
		fmt.Fprintf(&b, "step %s: ", p.Step)
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is every problem found; it is an error when non-empty.
type Problems []Problem

func (ps Problems) Error() string {
	if len(ps) == 0 {
		return "no problems"
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	if len(ps) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%d problems:\n  %s", len(ps), strings.Join(lines, "\n  "))
}

// Err returns ps as an error, or nil when empty. Problems are sorted by line.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Source != ps[j].Source {
			return ps[i].Source < ps[j].Source
		}
		return ps[i].Line < ps[j].Line
	})
	return ps
}

// PastPointOfNoReturn are the ids of the steps past a point of no return: each step marked
// point_of_no_return and the later steps of its subtree, in runbook order.
func (rb *Runbook) PastPointOfNoReturn() []string {
	var out []string
	past := ""
	for _, s := range rb.Steps {
		sub, _, _ := strings.Cut(s.ID, "/")
		if s.PointOfNoReturn {
			past = sub
		}
		if past != "" && sub == past {
			out = append(out, s.ID)
		}
	}
	return out
}
