package fleet

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/verdict"
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

// Newer is the verdict "no agent newer than Reference", of the one verdict
// shape (internal/ops/verdict): OK, or NoGo with Items naming the first
// ShowNewer agents found and Summary "2 agent(s) newer than the manager
// 4.9.0: 004 (web-04) 4.10.0" (when OK: "12 agents checked, none newer than
// the target 4.10.0"). The health check maps NoGo to WARN (reference: the
// running manager), the upgrade gate to no-go (reference: the target
// version). It embeds the comparison and the agents behind it.
type Newer struct {
	verdict.Verdict
	OutdatedReport
	// Of names the reference in messages ("the manager", "the target").
	Of    string
	First []OutdatedAgent
}

// judge sets the verdict from the comparison.
func (n *Newer) judge() {
	ref := strings.TrimSpace(n.Of + " " + n.Reference)
	if n.Count == 0 {
		n.Level, n.Items = verdict.OK, nil
		n.Summary = fmt.Sprintf("%d agents checked, none newer than %s", n.Checked, ref)
		if n.Unknown > 0 {
			n.Summary += fmt.Sprintf(" (%d without a known version)", n.Unknown)
		}
		return
	}
	n.Level = verdict.NoGo
	n.Items = make([]string, len(n.First))
	for i, a := range n.First {
		n.Items[i] = a.String()
	}
	more := ""
	if n.Count > len(n.First) {
		more = fmt.Sprintf(" and %d more", n.Count-len(n.First))
	}
	n.Summary = fmt.Sprintf("%d agent(s) newer than %s: %s%s", n.Count, ref, strings.Join(n.Items, ", "), more)
}

// AgentsNewerThan judges every agent's version against ref, named of in
// messages ("the manager").
func AgentsNewerThan(ctx context.Context, l Lister, ref manager.Version, of string) (Newer, error) {
	n := Newer{Verdict: verdict.Verdict{Level: verdict.Unknown}, OutdatedReport: OutdatedReport{Mode: ModeNewerThan, Reference: ref.String()}, Of: of}
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
	if err != nil {
		return n, err
	}
	n.judge()
	return n, nil
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
