package steps_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/clientset"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/steps"
	"github.com/siemctl/siemctl/internal/wazuhreal"
)

// fleetServer is the fake manager (real-shaped GET /agents envelopes) with
// 20 agents: 10 active, 5 disconnected, 5 never connected.
func fleetServer(t *testing.T) (*managertest.Server, *steps.Deps) {
	t.Helper()
	srv := managertest.New(t, managertest.Config{Agents: managertest.GenerateAgents(20)})
	c, err := manager.New(manager.Options{URL: srv.URL, Username: srv.Username(), Password: srv.Password(), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	d := depsWith(testConfig(t, ""), nil)
	d.Manager = clientset.Of[steps.ManagerAPI](c)
	return srv, d
}

func activeIDs(t *testing.T, e *env) []string {
	t.Helper()
	var rec fleet.AgentsBefore
	if ok, err := e.Get(rundata.KeyAgentsBefore, &rec); err != nil || !ok {
		t.Fatalf("no %s recorded: %v", rundata.KeyAgentsBefore, err)
	}
	ids := make([]string, len(rec.Active))
	for i, a := range rec.Active {
		ids[i] = a.ID
	}
	return ids
}

func TestAgentsRecordAndBack(t *testing.T) {
	srv, d := fleetServer(t)
	e := newEnv(d, nil)
	out, err := run(t, d, e, "agents.record", nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := activeIDs(t, e)
	if len(ids) != 10 || ids[0] != "001" || slices.Contains(ids, "000") {
		t.Fatalf("active before = %v (manager 000 must not count), want the 10 active agents", ids)
	}
	if !strings.Contains(out.Message, "10 of 20 agents active") {
		t.Errorf("message %q", out.Message)
	}
	var rec fleet.AgentsBefore
	_, _ = e.Get(rundata.KeyAgentsBefore, &rec)
	if rec.Fleet.ByStatus["disconnected"] != 5 || rec.Fleet.ByVersion["Wazuh v4.9.0"] != 15 || rec.Fleet.Total != 20 {
		t.Errorf("fleet before = %+v", rec.Fleet)
	}

	// All back: ok.
	if out, err := run(t, d, e, "gate.agents_back", nil); err != nil || !strings.Contains(out.Message, "10 of 10 agents active before are active again (100%)") {
		t.Fatalf("all back: %q, %v", out.Message, err)
	}

	// One of ten missing: 90% < 95%: not yet, naming the agent and its last keep-alive.
	srv.SetAgentStatus(ids[3], "disconnected")
	_, err = run(t, d, e, "gate.agents_back", nil)
	var pe *engine.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("one missing: err %v, want pending", err)
	}
	for _, want := range []string{"9 of 10", "90%", "< 95%", ids[3] + " host-", "disconnected", "last keep-alive 2025-03-02T09:14:00Z"} {
		if !strings.Contains(pe.Reason, want) {
			t.Errorf("pending reason %q lacks %q", pe.Reason, want)
		}
	}
	var after snapshot.Agents
	if ok, _ := e.Get(rundata.KeyAgentsAfter, &after); !ok || after.ByStatus["disconnected"] != 6 {
		t.Errorf("fleet after = %+v, want 6 disconnected", after)
	}

	// A lower threshold accepts it and still names the missing one.
	out, err = run(t, d, e, "gate.agents_back", map[string]any{"min_ratio": 0.9})
	if err != nil || !strings.Contains(out.Message, "still missing: "+ids[3]) {
		t.Fatalf("min_ratio 0.9: %q, %v", out.Message, err)
	}
}

func TestAgentsBackNoneActiveBefore(t *testing.T) {
	_, d := fleetServer(t)
	e := newEnv(d, map[string]any{rundata.KeyAgentsBefore: fleet.AgentsBefore{Active: []fleet.AgentRef{}}})
	out, err := run(t, d, e, "gate.agents_back", nil)
	if err != nil || !strings.Contains(out.Message, "no agent was active before") {
		t.Fatalf("%q, %v", out.Message, err)
	}
	// Without a record the gate cannot judge: no-go naming the step.
	_, err = run(t, d, newEnv(d, nil), "gate.agents_back", nil)
	var ng *engine.NoGoError
	if !errors.As(err, &ng) || !strings.Contains(ng.Reason, "agents.record") {
		t.Fatalf("no record: %v", err)
	}
}

// The agents gate reads Wazuh's own GET /agents answer (the API spec's
// example, v4.9.0): its three agents active before; 002 then answers
// disconnected with its last keep-alive.
func TestAgentsBackRealBody(t *testing.T) {
	var spec struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Example json.RawMessage `json:"example"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(wazuhreal.Read(t, "wazuh-v4.9.0", "api-spec.json"), &spec); err != nil {
		t.Fatal(err)
	}
	example := spec.Paths["/agents"]["get"].Responses["200"].Content["application/json"].Example
	if len(example) == 0 {
		t.Fatal("no GET /agents example in the API spec")
	}
	srv, d := fleetServer(t)
	body := example
	srv.Handle("GET /agents", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	e := newEnv(d, nil)
	if _, err := run(t, d, e, "agents.record", nil); err != nil {
		t.Fatal(err)
	}
	ids := activeIDs(t, e)
	if strings.Join(ids, ",") != "001,002,003" {
		t.Fatalf("active before %v, want 001-003 from the example", ids)
	}
	if out, err := run(t, d, e, "gate.agents_back", nil); err != nil || !strings.Contains(out.Message, "3 of 3") {
		t.Fatalf("%q, %v", out.Message, err)
	}
	body = bytes.Replace(example, []byte(`"name": "91642a418627", "status": "active"`), []byte(`"name": "91642a418627", "status": "disconnected"`), 1)
	if bytes.Equal(body, example) {
		t.Fatal("the example changed: agent 002 not found")
	}
	_, err := run(t, d, e, "gate.agents_back", nil)
	var pe *engine.PendingError
	if !errors.As(err, &pe) || !strings.Contains(pe.Reason, "2 of 3") || !strings.Contains(pe.Reason, "002 91642a418627 disconnected, last keep-alive 2021-05-26T12:40:40Z") {
		t.Fatalf("err %v", err)
	}
}

// gate.agents maps fleet's newer-than verdict against the target version:
// go, or no-go naming the agents.
func TestGateAgentsNewerThanTarget(t *testing.T) {
	for _, tc := range []struct {
		target, newest string
		nogo           string
		msg            string
	}{
		{"4.10.0", "Wazuh v4.10.0", "", "16 agents checked, none newer than the target 4.10.0 (5 without a known version)"},
		{"4.10.0", "Wazuh v4.10.1", "1 agent(s) newer than the target 4.10.0: 021 (new-01) 4.10.1; agents must not be newer than the manager", ""},
	} {
		agents := append(managertest.GenerateAgents(20), managertest.Agent{ID: "021", Name: "new-01", Status: "active", Version: tc.newest})
		srv := managertest.New(t, managertest.Config{Agents: agents})
		c, err := manager.New(manager.Options{URL: srv.URL, Username: srv.Username(), Password: srv.Password(), HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		d := depsWith(testConfig(t, ""), nil)
		d.Manager = clientset.Of[steps.ManagerAPI](c)
		out, err := run(t, d, newEnv(d, map[string]any{rundata.KeyTarget: tc.target}), "gate.agents", nil)
		var ng *engine.NoGoError
		switch {
		case tc.nogo != "":
			if !errors.As(err, &ng) || ng.Reason != tc.nogo {
				t.Errorf("%s: err = %v, want no-go %q", tc.newest, err, tc.nogo)
			}
		case err != nil || out.Message != tc.msg:
			t.Errorf("%s: %v, message %q, want %q", tc.newest, err, out.Message, tc.msg)
		}
	}
}
