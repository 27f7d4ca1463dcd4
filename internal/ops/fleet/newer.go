package fleet

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/siemctl/siemctl/internal/manager"
)

// Agents must not be newer than the manager (Wazuh's rule). That judgement is
// made here once: `agents outdated` streams the agents it finds (Outdated),
// the health check and the upgrade gate read the verdict (AgentsNewerThan)
// and map it to WARN + fix and to no-go.

// OutdatedAgent is an agent whose version is out of line.
type OutdatedAgent struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Status  string `json:"status"`
	Version string `json:"version"`
}

// String is "004 (web-04) 4.10.0".
func (a OutdatedAgent) String() string { return fmt.Sprintf("%s (%s) %s", a.ID, a.Name, a.Version) }

// OutdatedReport describes the comparison.
type OutdatedReport struct {
	// Mode: "newer_than_manager" (Wazuh's rule: agents must not be newer
	// than the manager) or "older_than" (--than V).
	Mode      string `json:"mode"`
	Reference string `json:"reference"` // the version compared with
	Checked   int    `json:"checked"`   // agents with a version (000 excluded)
	Unknown   int    `json:"unknown"`   // agents without a readable version (never connected)
	Count     int    `json:"count"`
}

// Comparison modes.
const (
	ModeNewerThan = "newer_than_manager"
	ModeOlderThan = "older_than"
)

func versionQuery(pageSize int) manager.AgentQuery {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	return manager.AgentQuery{Select: []string{"id", "name", "status", "version"}, Limit: pageSize}
}

// compare walks the agents and emits those out of line with ref: newer in
// ModeNewerThan, older in ModeOlderThan. Agent 000 is the manager and never
// counted; agents without a readable version are counted Unknown.
func compare(agents iter.Seq2[manager.Agent, error], mode string, ref manager.Version, emit func(OutdatedAgent) error) (OutdatedReport, error) {
	rep := OutdatedReport{Mode: mode, Reference: ref.String()}
	for a, err := range agents {
		if err != nil {
			return rep, fmt.Errorf("list agents: %w", err)
		}
		if a.IsManager() {
			continue
		}
		v, err := a.ParsedVersion()
		if err != nil {
			rep.Unknown++
			continue
		}
		rep.Checked++
		c := v.Compare(ref)
		if (mode == ModeNewerThan && c > 0) || (mode == ModeOlderThan && c < 0) {
			rep.Count++
			if err := emit(OutdatedAgent{ID: a.ID, Name: a.Name, Status: a.Status, Version: v.String()}); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

// Outdated streams the agents newer than the manager (than nil), or older
// than *than, to emit. Agent 000 is the manager and never listed.
func Outdated(ctx context.Context, api API, than *manager.Version, pageSize int, emit func(OutdatedAgent) error) (OutdatedReport, error) {
	mode, ref := ModeNewerThan, manager.Version{}
	if than != nil {
		mode, ref = ModeOlderThan, *than
	} else {
		info, err := api.ManagerInfo(ctx)
		if err != nil {
			return OutdatedReport{Mode: mode}, fmt.Errorf("manager version: %w", err)
		}
		ref, err = info.ParsedVersion()
		if err != nil {
			return OutdatedReport{Mode: mode}, fmt.Errorf("manager version: %w", err)
		}
	}
	return compare(api.Agents(ctx, versionQuery(pageSize)), mode, ref, emit)
}

// Lister lists agents in one answer (*manager.Client; the health checks' and
// the step kinds' manager interfaces).
type Lister interface {
	ListAgents(ctx context.Context, q manager.AgentQuery) ([]manager.Agent, error)
}

// ShowNewer is how many of the newer agents a Newer verdict names.
const ShowNewer = 5

// Newer is the verdict "no agent newer than Reference": the comparison and
// the first ShowNewer agents found. The health check maps it to OK or WARN
// (reference: the running manager), the upgrade gate to go or no-go
// (reference: the target version).
type Newer struct {
	OutdatedReport
	// Of names the reference in messages ("the manager", "the target").
	Of    string
	First []OutdatedAgent
}

func (n Newer) reference() string { return strings.TrimSpace(n.Of + " " + n.Reference) }

// OK reports that no agent is newer than the reference.
func (n Newer) OK() bool { return n.Count == 0 }

// Problem is "2 agent(s) newer than the manager 4.9.0: 004 (web-04) 4.10.0";
// empty
// when OK.
func (n Newer) Problem() string {
	if n.OK() {
		return ""
	}
	names := make([]string, len(n.First))
	for i, a := range n.First {
		names[i] = a.String()
	}
	more := ""
	if n.Count > len(n.First) {
		more = fmt.Sprintf(" and %d more", n.Count-len(n.First))
	}
	return fmt.Sprintf("%d agent(s) newer than %s: %s%s", n.Count, n.reference(), strings.Join(names, ", "), more)
}

// Summary is Problem, or "12 agents checked, none newer than the target
// 4.10.0" (with
// the agents of unknown version when there are any).
func (n Newer) Summary() string {
	if !n.OK() {
		return n.Problem()
	}
	s := fmt.Sprintf("%d agents checked, none newer than %s", n.Checked, n.reference())
	if n.Unknown > 0 {
		s += fmt.Sprintf(" (%d without a known version)", n.Unknown)
	}
	return s
}

// AgentsNewerThan judges every agent's version against ref, named of in
// messages ("the manager").
func AgentsNewerThan(ctx context.Context, l Lister, ref manager.Version, of string) (Newer, error) {
	n := Newer{OutdatedReport: OutdatedReport{Mode: ModeNewerThan, Reference: ref.String()}, Of: of}
	agents, err := l.ListAgents(ctx, versionQuery(DefaultPageSize))
	if err != nil {
		return n, fmt.Errorf("list agents: %w", err)
	}
	n.OutdatedReport, err = compare(each(agents), ModeNewerThan, ref, func(a OutdatedAgent) error {
		if len(n.First) < ShowNewer {
			n.First = append(n.First, a)
		}
		return nil
	})
	return n, err
}

func each(agents []manager.Agent) iter.Seq2[manager.Agent, error] {
	return func(yield func(manager.Agent, error) bool) {
		for _, a := range agents {
			if !yield(a, nil) {
				return
			}
		}
	}
}
