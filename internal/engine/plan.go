package engine

import (
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/siemctl/siemctl/internal/runbook"
)

// Selection narrows a runbook: Only keeps the named steps and subtrees
// (a parent id selects its children), Skip drops them; Skip wins.
// Always-steps are kept by Only (they are the run's finally) but dropped by Skip.
type Selection struct {
	Only []string `json:"only,omitempty"`
	Skip []string `json:"skip,omitempty"`
}

// Plan is a validated runbook ready to run: every step with its kind and
// decoded parameters, in order.
type Plan[D any] struct {
	Runbook   *runbook.Runbook
	Selection Selection
	Steps     []*PlannedStep[D]
}

// PlannedStep is one step of a plan.
type PlannedStep[D any] struct {
	runbook.Step
	// N is the 1-based position among the selected steps (0 when not selected).
	N int
	// Selected is false when --only/--skip dropped it; Reason then says why.
	Selected bool
	Reason   string

	Kind     Kind[D]
	Params   Params
	Describe []string
	ReadOnly bool
	Undo     *PlannedUndo[D]
}

// PlannedUndo is a step's decoded undo.
type PlannedUndo[D any] struct {
	Kind     Kind[D]
	Params   Params
	Describe []string
	Timeout  time.Duration
}

// Selected returns the selected steps in order.
func (p *Plan[D]) Selected() []*PlannedStep[D] {
	var out []*PlannedStep[D]
	for _, s := range p.Steps {
		if s.Selected {
			out = append(out, s)
		}
	}
	return out
}

// Total is the number of selected steps (the m of "step n/m").
func (p *Plan[D]) Total() int { return len(p.Selected()) }

// Step returns the planned step with id.
func (p *Plan[D]) Step(id string) (*PlannedStep[D], bool) {
	for _, s := range p.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return nil, false
}

// PlanError lists every problem that stops a plan.
type PlanError struct{ Problems runbook.Problems }

func (e *PlanError) Error() string { return "invalid plan: " + e.Problems.Error() }

// Unwrap exposes the problems.
func (e *PlanError) Unwrap() error { return e.Problems }

// LoadPlan reads the runbook name from fsys and plans it; pc is handed to
// every step's Describe.
func LoadPlan[D any](fsys fs.FS, name string, reg *Registry[D], sel Selection, pc PlanContext) (*Plan[D], error) {
	data, err := runbook.Read(fsys, name)
	if err != nil {
		return nil, err
	}
	return ParsePlan(data, name, reg, sel, pc)
}

// ParsePlan parses runbook text and plans it, reporting YAML, structure,
// kind, parameter and selection problems together; pc is handed to every
// step's Describe.
func ParsePlan[D any](data []byte, source string, reg *Registry[D], sel Selection, pc PlanContext) (*Plan[D], error) {
	rb, probs := runbook.Decode(data, source)
	if rb == nil {
		return nil, &PlanError{Problems: probs}
	}
	p, perr := planRunbook(rb, reg, sel, pc)
	probs = append(probs, perr...)
	if err := probs.Err(); err != nil {
		return nil, &PlanError{Problems: probs}
	}
	return p, nil
}

// PlanRunbook checks a parsed runbook against the registry and selection,
// decoding every step's (and undo's) parameters and describing them with
// the planning context pc. Nothing is run. All problems are reported at
// once in a *PlanError.
func PlanRunbook[D any](rb *runbook.Runbook, reg *Registry[D], sel Selection, pc PlanContext) (*Plan[D], error) {
	p, probs := planRunbook(rb, reg, sel, pc)
	if err := probs.Err(); err != nil {
		return nil, &PlanError{Problems: probs}
	}
	return p, nil
}

func planRunbook[D any](rb *runbook.Runbook, reg *Registry[D], sel Selection, pc PlanContext) (*Plan[D], runbook.Problems) {
	probs := runbook.Check(rb)
	add := func(s *runbook.Step, format string, args ...any) {
		p := runbook.Problem{Source: rb.Source, Msg: fmt.Sprintf(format, args...)}
		if s != nil {
			p.Line, p.Step = s.Line, s.ID
		}
		probs = append(probs, p)
	}
	if reg == nil {
		reg = &Registry[D]{}
	}
	plan := &Plan[D]{Runbook: rb, Selection: sel}
	for i := range rb.Steps {
		s := rb.Steps[i]
		ps := &PlannedStep[D]{Step: s}
		plan.Steps = append(plan.Steps, ps)
		k, ok := reg.Lookup(s.Kind)
		if !ok {
			if s.Kind != "" {
				add(&s, "unknown kind %s", s.Kind)
			}
		} else {
			ps.Kind, ps.ReadOnly = k, readOnly(k)
			ps.Params, ps.Describe = decode(k, s.With, pc, func(err error) { add(&s, "%s: %v", s.Kind, err) })
		}
		if s.Undo != nil {
			uk, ok := reg.Lookup(s.Undo.Kind)
			if !ok {
				if s.Undo.Kind != "" {
					add(&s, "undo: unknown kind %s", s.Undo.Kind)
				}
				continue
			}
			u := &PlannedUndo[D]{Kind: uk, Timeout: s.Undo.Timeout.D()}
			u.Params, u.Describe = decode(uk, s.Undo.With, pc, func(err error) { add(&s, "undo %s: %v", s.Undo.Kind, err) })
			ps.Undo = u
		}
	}

	// Selection.
	for _, id := range append(slices.Clone(sel.Only), sel.Skip...) {
		if !slices.ContainsFunc(rb.Steps, func(s runbook.Step) bool { return s.Covers(id) }) {
			add(nil, "no step matches %q (see the plan for step ids)", id)
		}
	}
	covered := func(s runbook.Step, ids []string) bool {
		return slices.ContainsFunc(ids, s.Covers)
	}
	n := 0
	for _, ps := range plan.Steps {
		switch {
		case covered(ps.Step, sel.Skip):
			ps.Reason = "skipped by selection"
		case len(sel.Only) > 0 && !ps.Always && !covered(ps.Step, sel.Only):
			ps.Reason = "not in the selection"
		default:
			ps.Selected = true
			n++
			ps.N = n
		}
	}
	for _, ps := range plan.Steps {
		if !ps.Selected {
			continue
		}
		for _, need := range ps.Needs {
			if dep, ok := plan.Step(need); ok && !dep.Selected {
				add(&ps.Step, "needs %s, which the selection leaves out (%s)", need, dep.Reason)
			}
		}
	}
	return plan, probs
}

func decode[D any](k Kind[D], with map[string]any, pc PlanContext, fail func(error)) (Params, []string) {
	p, err := k.Decode(with)
	if err != nil {
		fail(err)
		return nil, nil
	}
	if p == nil {
		fail(fmt.Errorf("kind decoded no parameters"))
		return nil, nil
	}
	if err := p.Validate(); err != nil {
		fail(err)
		return nil, nil
	}
	return p, p.Describe(pc)
}
