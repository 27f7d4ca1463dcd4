package fleet

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/netclient"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		err  error
		ok   bool
	}{
		{"id 001", ValidateIDs([]string{"001"}, "restart"), true},
		{"id 000 show", ValidateIDs([]string{"000"}, ""), true},
		{"id 000 restart", ValidateIDs([]string{"000"}, "restart"), false},
		{"id 1", ValidateIDs([]string{"1"}, ""), false},
		{"id 0001", ValidateIDs([]string{"0001"}, ""), false},
		{"id abc", ValidateIDs([]string{"abc"}, ""), false},
		{"no ids", ValidateIDs(nil, "remove"), false},
		{"older 7d", ValidateOlderThan("7d"), true},
		{"older 3600", ValidateOlderThan("3600"), true},
		{"older 1w", ValidateOlderThan("1w"), false},
		{"older 1h30m", ValidateOlderThan("1h30m"), false},
		{"older empty", ValidateOlderThan(""), false},
		{"status ok", ValidateStatuses([]string{"never_connected", "pending"}), true},
		{"status bad", ValidateStatuses([]string{"Active"}), false},
	}
	for _, tt := range tests {
		if (tt.err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, tt.err)
		}
		if tt.err != nil && !errors.Is(tt.err, ErrInvalidInput) {
			t.Errorf("%s: %v is not ErrInvalidInput", tt.name, tt.err)
		}
	}
	if err := ValidateIDs([]string{"1", "000", "002"}, "restart"); err == nil || !errors.Is(err, manager.ErrManagerAgent) || !errors.Is(err, manager.ErrInvalidAgentID) {
		t.Errorf("every bad id reported: %v", err)
	}
	for _, s := range []string{"4.9", "v4.9.0-rc1", "Wazuh v4.9.0", "", "4.x.0"} {
		if _, err := ParseVersion(s); err == nil {
			t.Errorf("version %q accepted", s)
		}
	}
	if v, err := ParseVersion("v4.10.1"); err != nil || v.String() != "4.10.1" {
		t.Errorf("v4.10.1: %v %v", v, err)
	}
}

func TestAPIDown(t *testing.T) {
	tests := []struct {
		err  error
		down bool
	}{
		{&netclient.Error{Kind: netclient.ErrUnreachable}, true},
		{fmt.Errorf("x: %w", &netclient.Error{Kind: netclient.ErrTimeout}), true},
		{&manager.APIError{Status: 500, Code: 1017}, true}, // not ready unwraps to ErrNotReady
		{&manager.APIError{Status: 502}, true},
		{&manager.APIError{Status: 401, Title: "Unauthorized"}, false},
		{&manager.APIError{Status: 400, Code: 1701}, false},
		{&netclient.Error{Kind: netclient.ErrTLS}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := APIDown(tt.err); got != tt.down {
			t.Errorf("%v: %v", tt.err, got)
		}
	}
}

func TestOutcomesOf(t *testing.T) {
	r := manager.Result{Affected: []string{"002"}, Message: "some", Failed: []manager.ItemError{
		{Code: 1707, Message: "Cannot send request, agent is not active", IDs: []string{"003"}},
	}}
	o := outcomesOf("restart", []string{"003", "002", "005"}, r)
	if len(o.Agents) != 3 || o.Agents[0].ID != "003" || o.Agents[0].OK || o.Agents[0].Explanation == "" ||
		!o.Agents[1].OK || o.Agents[2].OK || o.Agents[2].Message != "no answer for this agent" || o.OK != 1 || o.Failed != 2 || o.Complete {
		t.Errorf("%+v", o)
	}
}

// hungAPI never answers GET /agents: its sequence ends only when ctx does, with the client's
// classification of that end.
type hungAPI struct{ API }

func (hungAPI) Agents(ctx context.Context, _ manager.AgentQuery) iter.Seq2[manager.Agent, error] {
	return func(yield func(manager.Agent, error) bool) {
		<-ctx.Done()
		yield(manager.Agent{}, netclient.Classify("GET /agents", "http://127.0.0.1:55000/agents", ctx.Err()))
	}
}

type budgetTools struct {
	Tools
	called    bool
	ctxErr    error
	remaining time.Duration
}

func (b *budgetTools) AgentList(ctx context.Context, _ manager.AgentListFilter) ([]manager.ToolAgent, error) {
	b.called, b.ctxErr = true, ctx.Err()
	if dl, ok := ctx.Deadline(); ok {
		b.remaining = time.Until(dl)
	}
	return []manager.ToolAgent{{ID: "001", Name: "web-01", IP: "any", Status: manager.AgentActive}}, nil
}

// An API hung until its page deadline is down; the tool then gets its own budget, not the spent one.
func TestListToolFallbackHasItsOwnBudget(t *testing.T) {
	tools := &budgetTools{}
	var ids []string
	lst, err := List(context.Background(), hungAPI{}, tools, ListQuery{PageTimeout: 20 * time.Millisecond, ToolTimeout: time.Hour},
		func(r *Row) error { ids = append(ids, r.ID); return nil })
	if err != nil || lst.Source != SourceTool || len(ids) != 1 {
		t.Fatalf("List = %+v %v, rows %v", lst, err, ids)
	}
	if tools.ctxErr != nil || tools.remaining < 59*time.Minute {
		t.Fatalf("the tool ran with ctx err %v and %v left, want its own hour", tools.ctxErr, tools.remaining)
	}
	if !errors.Is(lst.APIErr, context.DeadlineExceeded) || !strings.Contains(lst.APIErr.Error(), "no answer from the manager for 20ms") {
		t.Fatalf("APIErr = %v", lst.APIErr)
	}
	// the caller's own end (an interrupt) is not a reason to run the tool
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tools = &budgetTools{}
	if _, err := List(ctx, hungAPI{}, tools, ListQuery{PageTimeout: time.Hour}, func(*Row) error { return nil }); err == nil || tools.called {
		t.Fatalf("interrupted: err %v, tool ran: %v", err, tools.called)
	}
}
