package manager_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
)

func TestUpgradeAgents(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	var query string
	e.srv.Handle("PUT /agents/upgrade", func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		// The real API's answer: tasks for 001 and 002, 1822 for 003, 1707 for 004.
		_, _ = w.Write([]byte(`{"data":{"affected_items":[{"agent":"001","task_id":1},{"agent":"002","task_id":2}],` +
			`"total_affected_items":2,"total_failed_items":2,"failed_items":[` +
			`{"error":{"code":1707,"message":"Cannot send request, agent is not active","remediation":"Please, check non-active agents connection"},"id":["004"]},` +
			`{"error":{"code":1822,"message":"Current agent version is greater or equal"},"id":["003"]}]},` +
			`"message":"Some agents were not upgraded","error":2}`))
	})
	got, err := e.c.UpgradeAgents(ctxT(t), []string{"001", "002", "003", "004"}, manager.UpgradeOptions{Version: "4.10.0", NodeName: "worker1"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Tasks["001"] != 1 || got.Tasks["002"] != 2 || len(got.Failed) != 2 || got.Failed[1].Code != 1822 || got.Failed[1].IDs[0] != "003" {
		t.Errorf("created: %+v", got)
	}
	for _, want := range []string{"agents_list=001%2C002%2C003%2C004", "upgrade_version=4.10.0", "node_name=worker1"} {
		if !strings.Contains(query, want) {
			t.Errorf("query %q lacks %s", query, want)
		}
	}
	// Refused before anything is sent: agent 000, more than 500 agents, a bad target.
	many := make([]string, 501)
	for i := range many {
		many[i] = fmt.Sprintf("%03d", i+1)
	}
	for name, call := range map[string]func() error{
		"000": func() error {
			_, err := e.c.UpgradeAgents(ctxT(t), []string{"000"}, manager.UpgradeOptions{})
			return err
		},
		"501": func() error { _, err := e.c.UpgradeAgents(ctxT(t), many, manager.UpgradeOptions{}); return err },
		"version": func() error {
			_, err := e.c.UpgradeAgents(ctxT(t), []string{"001"}, manager.UpgradeOptions{Version: "latest"})
			return err
		},
	} {
		query = ""
		if err := call(); err == nil || query != "" {
			t.Errorf("%s: err %v, sent %q", name, err, query)
		}
	}
}

// A refusal of the whole request (the module's 1823: above the manager without force) is an API error
// with its code.
func TestUpgradeAgentsRefused(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	e.srv.Handle("PUT /agents/upgrade", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
		w.WriteHeader(500)
		_, _ = w.Write([]byte(`{"title":"Wazuh Error","detail":"Upgrading an agent to a version higher than the manager requires the force flag","error":1823}`))
	})
	_, err := e.c.UpgradeAgents(ctxT(t), []string{"001"}, manager.UpgradeOptions{Version: "4.11.0"})
	var ae *manager.APIError
	if !errors.As(err, &ae) || ae.Code != 1823 {
		t.Fatalf("err %v", err)
	}
}

// upgrade_result is read 500 agents per request, whatever the fleet's size.
func TestUpgradeResultsBulk(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	var calls atomic.Int32
	e.srv.Handle("GET /agents/upgrade_result", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		ids := strings.Split(r.URL.Query().Get("agents_list"), ",")
		var items []string
		for _, id := range ids[1:] {
			items = append(items, fmt.Sprintf(`{"message":"Success","agent":"%s","task_id":%s,"node":"master-node","module":"upgrade_module",`+
				`"command":"upgrade","status":"Updated","create_time":"2026-12-07T18:00:00Z","update_time":"2026-12-07T18:00:10Z"}`, id, strings.TrimLeft(id, "0")))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":{"affected_items":[%s],"total_affected_items":%d,"total_failed_items":1,"failed_items":[`+
			`{"error":{"code":1813,"message":"No task in DB"},"id":["%s"]}]},"message":"Some upgrade tasks were not returned","error":2}`,
			strings.Join(items, ","), len(items), ids[0])
	})
	ids := make([]string, 1200)
	for i := range ids {
		ids[i] = fmt.Sprintf("%03d", i+1)
	}
	tasks, fails, err := e.c.UpgradeResults(ctxT(t), ids)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || len(tasks) != 1197 || len(fails) != 3 || fails[0].Code != 1813 || tasks[0].Status != manager.TaskUpdated || tasks[0].Agent != "002" {
		t.Errorf("calls %d tasks %d fails %v first %+v", calls.Load(), len(tasks), fails, tasks[0])
	}
}
