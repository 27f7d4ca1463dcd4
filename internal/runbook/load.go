package runbook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxSize bounds a runbook file; anything larger is refused before parsing.
const MaxSize = 1 << 20

var (
	idRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9_-]*)*$`)
	kindRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
	lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// Read reads the runbook name from fsys (e.g. runbooks.FS or os.DirFS for
// a site's own file), at most one byte more than MaxSize (which Decode
// refuses).
func Read(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open runbook: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read runbook %s: %w", name, err)
	}
	return data, nil
}

// Parse decodes a runbook strictly (unknown fields are errors) and checks
// its structure. The error, if any, is Problems listing everything found.
func Parse(data []byte, source string) (*Runbook, error) {
	rb, probs := Decode(data, source)
	if rb != nil {
		probs = append(probs, Check(rb)...)
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	return rb, nil
}

// Decode is the YAML half of Parse: it decodes strictly and returns the
// YAML-level problems (syntax, unknown fields, bad durations) without the
// structural Check, so a caller (engine planning) can report those together
// with its own findings. The runbook is nil only when the text is not usable
// YAML at all.
func Decode(data []byte, source string) (rb *Runbook, probs Problems) {
	if source == "" {
		source = "runbook"
	}
	if len(data) > MaxSize {
		return nil, Problems{{Source: source, Msg: fmt.Sprintf("larger than %d bytes", MaxSize)}}
	}
	// The YAML library is third-party code fed with operator input; a panic
	// in it must become an ordinary error, never a crash mid-upgrade.
	defer func() {
		if r := recover(); r != nil {
			rb, probs = nil, Problems{{Source: source, Msg: fmt.Sprintf("unparsable YAML: %v", r)}}
		}
	}()

	var out Runbook
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if derr := dec.Decode(&out); derr != nil {
		var te *yaml.TypeError
		switch {
		case errors.Is(derr, io.EOF):
			return nil, Problems{{Source: source, Msg: "empty runbook"}}
		case errors.As(derr, &te):
			for _, e := range te.Errors {
				probs = append(probs, yamlProblem(source, e))
			}
		default:
			return nil, Problems{yamlProblem(source, derr.Error())}
		}
	}
	var extra yaml.Node
	if derr := dec.Decode(&extra); !errors.Is(derr, io.EOF) {
		probs = append(probs, Problem{Source: source, Line: extra.Line, Msg: "more than one YAML document"})
	}

	out.Source = source
	out.Raw = append([]byte(nil), data...)
	out.Hash = Hash(data)
	setLines(&out, data)
	return &out, probs
}

func yamlProblem(source, msg string) Problem {
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Problem{Source: source, Line: n, Msg: strings.Replace(m[2], "runbook.", "", 1)}
	}
	return Problem{Source: source, Msg: msg}
}

// setLines records each step's line from a second, node-level parse.
func setLines(rb *Runbook, data []byte) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "steps" || root.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for j, item := range root.Content[i+1].Content {
			if j < len(rb.Steps) {
				rb.Steps[j].Line = item.Line
			}
		}
	}
}

// Check validates a runbook's structure without knowing the step kinds:
// name, id and kind syntax, duplicate ids, needs pointing at earlier steps,
// on_fail values, retries, templates in parameters, always-steps last.
func Check(rb *Runbook) Problems {
	var probs Problems
	add := func(s *Step, format string, args ...any) {
		p := Problem{Source: rb.Source, Msg: fmt.Sprintf(format, args...)}
		if s != nil {
			p.Line, p.Step = s.Line, s.ID
		}
		probs = append(probs, p)
	}
	if strings.TrimSpace(rb.Name) == "" {
		add(nil, "runbook has no name")
	}
	if len(rb.Steps) == 0 {
		add(nil, "runbook has no steps")
	}
	seen := make(map[string]int, len(rb.Steps))
	sawAlways := false
	for i := range rb.Steps {
		s := &rb.Steps[i]
		switch {
		case s.ID == "":
			add(s, "step %d has no id", i+1)
		case !idRE.MatchString(s.ID):
			add(s, "id must be a lowercase slash path like preflight/cluster-health")
		}
		if prev, dup := seen[s.ID]; dup && s.ID != "" {
			add(s, "duplicate id (first at line %d)", prev)
		} else {
			seen[s.ID] = s.Line
		}
		checkKind(s.Kind, func(m string) { add(s, "%s", m) })
		if s.OnFail != "" && s.OnFail != OnFailAbort && s.OnFail != OnFailRollback {
			add(s, "on_fail must be abort or rollback, not %q", s.OnFail)
		}
		if s.Retries < 0 {
			add(s, "retries must not be negative")
		}
		for _, n := range s.Needs {
			switch _, ok := seen[n]; {
			case n == s.ID:
				add(s, "needs itself")
			case ok:
			case containsID(rb.Steps[i+1:], n):
				add(s, "needs %s, which comes later; move it after %s", n, n)
			default:
				add(s, "needs %s, which is not a step of this runbook", n)
			}
		}
		if msg := templated("with", s.With); msg != "" {
			add(s, "%s", msg)
		}
		if s.Undo != nil {
			checkKind(s.Undo.Kind, func(m string) { add(s, "undo: %s", m) })
			if msg := templated("undo.with", s.Undo.With); msg != "" {
				add(s, "%s", msg)
			}
		}
		if s.Always {
			sawAlways = true
			if s.OnFail == OnFailRollback {
				add(s, "an always-step runs after the outcome is decided; it cannot have on_fail: rollback")
			}
			if s.Undo != nil {
				add(s, "an always-step cannot have an undo")
			}
			if s.PointOfNoReturn {
				add(s, "an always-step runs after the outcome is decided; it cannot be a point_of_no_return")
			}
		} else if sawAlways {
			add(s, "comes after an always-step; always-steps (finally) must be last")
		}
	}
	checkPhases(rb, func(format string, args ...any) { add(nil, format, args...) })
	return probs
}

// checkPhases: each phase has a unique name and selects subtrees that hold steps, and every step
// (always-steps included: a phase runs on its own) is in exactly one phase.
func checkPhases(rb *Runbook, add func(format string, args ...any)) {
	if len(rb.Phases) == 0 {
		return
	}
	names := map[string]bool{}
	owner := map[string]string{} // subtree → phase
	for i, p := range rb.Phases {
		switch {
		case p.Name == "":
			add("phase %d has no name", i+1)
		case names[p.Name]:
			add("phase %s: duplicate name", p.Name)
		}
		names[p.Name] = true
		if len(p.Steps) == 0 {
			add("phase %s selects no steps", p.Name)
		}
		for _, sub := range p.Steps {
			if prev, ok := owner[sub]; ok {
				add("phase %s: subtree %s is already phase %s's", p.Name, sub, prev)
				continue
			}
			owner[sub] = p.Name
			if !slices.ContainsFunc(rb.Steps, func(s Step) bool { return strings.HasPrefix(s.ID, sub+"/") }) {
				add("phase %s: subtree %s holds no step of this runbook", p.Name, sub)
			}
		}
	}
	for _, s := range rb.Steps {
		sub, _, _ := strings.Cut(s.ID, "/")
		if _, ok := owner[sub]; !ok && s.ID != "" {
			add("step %s is in no phase: add its subtree %s to one", s.ID, sub)
		}
	}
}

func checkKind(kind string, add func(string)) {
	switch {
	case kind == "":
		add("no kind")
	case !kindRE.MatchString(kind):
		add(fmt.Sprintf("kind %q must be dotted lowercase like units.stop", kind))
	}
}

func containsID(steps []Step, id string) bool {
	for _, s := range steps {
		if s.ID == id {
			return true
		}
	}
	return false
}

// templated finds "{{" or "${" in any string of v: runbooks are data, the
// kinds read run values (target version, recorded versions) from the engine.
func templated(path string, v any) string {
	switch t := v.(type) {
	case string:
		if strings.Contains(t, "{{") || strings.Contains(t, "${") {
			return fmt.Sprintf("%s: %q looks like a template; runbooks have no expressions (the kind reads run data such as the target version itself)", path, t)
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if m := templated(path+"."+k, t[k]); m != "" {
				return m
			}
		}
	case []any:
		for i, e := range t {
			if m := templated(fmt.Sprintf("%s[%d]", path, i), e); m != "" {
				return m
			}
		}
	}
	return ""
}
