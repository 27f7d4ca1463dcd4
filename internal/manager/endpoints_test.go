package manager_test

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/manager/managertest"
	"github.com/siemctl/siemctl/internal/netclient"
)

func TestFixtureEndpoints(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	for route, file := range map[string]string{
		"GET /":                                 "info.json",
		"GET /manager/info":                     "manager_info.json",
		"GET /manager/status":                   "manager_status_restarting.json",
		"GET /manager/configuration/validation": "validation_error.json",
		"GET /cluster/status":                   "cluster_status.json",
		"GET /agents/summary/status":            "agents_summary.json",
		"GET /security/users":                   "users.json",
		"GET /agents":                           "agents.json",
	} {
		e.srv.Handle(route, serveFixture(t, 200, file))
	}
	ctx := ctxT(t)

	info, err := e.c.Info(ctx)
	if err != nil || info.Revision != 40907 || info.APIVersion != "4.9.0" || !info.Timestamp.Equal(time.Date(2025, 3, 2, 9, 15, 44, 0, time.UTC)) {
		t.Fatalf("Info = %+v, %v", info, err)
	}
	mi, err := e.c.ManagerInfo(ctx)
	if err != nil || mi.Version != "v4.9.0" || mi.Path != "/var/ossec" || mi.Type != "server" {
		t.Fatalf("ManagerInfo = %+v, %v", mi, err)
	}
	if v, err := mi.ParsedVersion(); err != nil || v != (manager.Version{Major: 4, Minor: 9}) {
		t.Fatalf("ParsedVersion = %v, %v", v, err)
	}
	st, err := e.c.ManagerStatus(ctx)
	if err != nil || len(st) != 16 {
		t.Fatalf("ManagerStatus = %v, %v", st, err)
	}
	wantNR := []string{"wazuh-modulesd (restarting)", "wazuh-analysisd (failed)", "wazuh-db (missing)"}
	if nr := st.NotReady(); !reflect.DeepEqual(nr, wantNR) {
		t.Fatalf("NotReady = %q, want %q", nr, wantNR)
	}
	val, err := e.c.ValidateConfig(ctx)
	wantErrs := []string{"(1230): Invalid element in the configuration: 'log_alert_lvl'.", "(1202): Configuration error at 'etc/ossec.conf'."}
	if err != nil || val.OK || !reflect.DeepEqual(val.Errors, wantErrs) {
		t.Fatalf("ValidateConfig = %+v, %v", val, err)
	}
	cs, err := e.c.ClusterStatus(ctx)
	if err != nil || cs.Enabled || cs.Running {
		t.Fatalf("ClusterStatus = %+v, %v", cs, err)
	}
	sum, err := e.c.AgentsSummary(ctx)
	if err != nil || sum.Connection.Active != 3 || sum.Connection.NeverConnected != 1 || sum.Connection.Total != 5 || sum.Configuration.NotSynced != 1 {
		t.Fatalf("AgentsSummary = %+v, %v", sum, err)
	}
	users, err := e.c.Users(ctx)
	want := []manager.User{{ID: 1, Username: "wazuh", Roles: []int{1}, AllowRunAs: true}, {ID: 2, Username: "wazuh-wui", Roles: []int{1}, AllowRunAs: true}, {ID: 100, Username: "siemctl", Roles: []int{3, 4}}}
	if err != nil || !reflect.DeepEqual(users, want) {
		t.Fatalf("Users = %+v, %v", users, err)
	}
	agents, err := e.c.ListAgents(ctx, manager.AgentQuery{})
	if err != nil || len(agents) != 3 {
		t.Fatalf("ListAgents = %d, %v", len(agents), err)
	}
	a0, a1, a2 := agents[0], agents[1], agents[2]
	if !a0.IsManager() || a0.LastKeepAlive.Year() != 9999 || a0.OS.Platform != "ubuntu" {
		t.Fatalf("agent 000 = %+v", a0)
	}
	if a1.RegisterIP != "any" || a1.IP != "10.0.4.21" || a1.Status != manager.AgentDisconnected || !reflect.DeepEqual(a1.Group, []string{"default"}) ||
		!a1.LastKeepAlive.Equal(time.Date(2025, 3, 1, 22, 41, 17, 0, time.UTC)) {
		t.Fatalf("agent 001 = %+v", a1)
	}
	if v, err := a1.ParsedVersion(); err != nil || v.String() != "4.8.2" {
		t.Fatalf("agent 001 version = %v, %v", v, err)
	}
	if a2.IP != "10.0.4.22" || !a2.LastKeepAlive.IsZero() || a2.Version != "" { // ip falls back to registerIP
		t.Fatalf("agent 002 = %+v", a2)
	}
	if _, err := a2.ParsedVersion(); err == nil {
		t.Fatal("never-connected agent has no version")
	}
}

func TestValidationOK(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	val, err := e.c.ValidateConfig(ctxT(t))
	if err != nil || !val.OK || len(val.Errors) != 0 {
		t.Fatalf("ValidateConfig = %+v, %v", val, err)
	}
	e.srv.BadConfigNext.Store(true)
	val, err = e.c.ValidateConfig(ctxT(t))
	if err != nil || val.OK || len(val.Errors) != 2 {
		t.Fatalf("ValidateConfig = %+v, %v", val, err)
	}
}

func TestAgentsPagination(t *testing.T) {
	e := setup(t, managertest.Config{Agents: managertest.GenerateAgents(1233)}, nil) // + 000 = 1234
	pages := func() []string {
		var out []string
		for _, q := range e.srv.SeenPath("GET /agents") {
			v, _ := url.ParseQuery(q)
			out = append(out, v.Get("offset")+"/"+v.Get("limit"))
		}
		return out
	}
	n, prev := 0, ""
	for a, err := range e.c.Agents(ctxT(t), manager.AgentQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		if a.ID <= prev {
			t.Fatalf("agent %s after %s: duplicate or out of order", a.ID, prev)
		}
		prev = a.ID
		n++
	}
	if want := []string{"0/500", "500/500", "1000/500"}; n != 1234 || !reflect.DeepEqual(pages(), want) {
		t.Fatalf("agents = %d over pages %v, want 1234 over %v", n, pages(), want)
	}

	t.Run("early break stops fetching", func(t *testing.T) {
		before := len(pages())
		k := 0
		for _, err := range e.c.Agents(ctxT(t), manager.AgentQuery{Limit: 100}) {
			if err != nil {
				t.Fatal(err)
			}
			if k++; k == 150 {
				break
			}
		}
		if got := pages()[before:]; !reflect.DeepEqual(got, []string{"0/100", "100/100"}) {
			t.Fatalf("pages = %v, want 2", got)
		}
	})
	t.Run("status filter", func(t *testing.T) {
		got, err := e.c.ListAgents(ctxT(t), manager.AgentQuery{Status: []string{manager.AgentNeverConnected}})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range got {
			if a.Status != manager.AgentNeverConnected {
				t.Fatalf("agent %s has status %s", a.ID, a.Status)
			}
		}
		if len(got) != 308 { // ids ≡ 3 mod 4 in 1..1233
			t.Fatalf("never_connected = %d, want 308", len(got))
		}
	})
}

func TestAgentsQueryValidation(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	tests := []struct {
		name string
		q    manager.AgentQuery
		want error
	}{
		{"short id", manager.AgentQuery{IDs: []string{"1"}}, manager.ErrInvalidAgentID},
		{"bad status", manager.AgentQuery{Status: []string{"online"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.c.ListAgents(ctxT(t), tt.q)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if n := e.srv.Requests.Load(); n != 0 {
		t.Fatalf("requests = %d, want none for invalid queries", n)
	}
}

func TestAgentLookup(t *testing.T) {
	e := setup(t, managertest.Config{Agents: managertest.GenerateAgents(3)}, nil)
	ctx := ctxT(t)
	a, err := e.c.Agent(ctx, "002")
	if err != nil || a.ID != "002" || a.Name != "host-00002" {
		t.Fatalf("Agent(002) = %+v, %v", a, err)
	}
	_, err = e.c.Agent(ctx, "099")
	if !errors.Is(err, manager.ErrAgentNotFound) || !manager.HasCode(err, manager.CodeAgentNotFound) {
		t.Fatalf("Agent(099) err = %v, want ErrAgentNotFound", err)
	}
	if _, err := e.c.Agent(ctx, "1"); !errors.Is(err, manager.ErrInvalidAgentID) || !strings.Contains(err.Error(), "three digits like 001") {
		t.Fatalf("Agent(1) err = %v", err)
	}
	if a, err := e.c.Agent(ctx, "000"); err != nil || !a.IsManager() {
		t.Fatalf("Agent(000) = %+v, %v (000 is valid for reads)", a, err)
	}
}

func TestAgentsPartialEnvelope(t *testing.T) {
	e := setup(t, managertest.Config{}, nil)
	e.srv.Handle("GET /agents", serveFixture(t, 200, "agents_partial.json"))
	var got []string
	var last error
	for a, err := range e.c.Agents(ctxT(t), manager.AgentQuery{IDs: []string{"001", "042"}}) {
		if err != nil {
			last = err
			break
		}
		got = append(got, a.ID)
	}
	var pe *manager.PartialError
	if !reflect.DeepEqual(got, []string{"001"}) || !errors.As(last, &pe) || !errors.Is(last, manager.ErrAgentNotFound) {
		t.Fatalf("agents %v, err %v", got, last)
	}
	if len(pe.Failed) != 1 || !reflect.DeepEqual(pe.Failed[0].IDs, []string{"042"}) || pe.Failed[0].Remediation == "" {
		t.Fatalf("failed = %+v", pe.Failed)
	}
}

func TestRestartAgents(t *testing.T) {
	t.Run("partial fixture", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		e.srv.Handle("PUT /agents/restart", serveFixture(t, 200, "restart_partial.json"))
		res, err := e.c.RestartAgents(ctxT(t), []string{"002", "003", "004", "099"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Affected, []string{"002"}) || len(res.Failed) != 2 {
			t.Fatalf("result = %+v", res)
		}
		if f := res.Failed[1]; f.Code != manager.CodeAgentNotActive || !reflect.DeepEqual(f.IDs, []string{"003", "004"}) || f.Explanation() == "" {
			t.Fatalf("failed[1] = %+v", f)
		}
		if err := res.Err(); !errors.Is(err, manager.ErrAgentNotActive) || !errors.Is(err, manager.ErrAgentNotFound) {
			t.Fatalf("Err() = %v", err)
		}
	})
	t.Run("fake server", func(t *testing.T) {
		e := setup(t, managertest.Config{Agents: managertest.GenerateAgents(4)}, nil)
		res, err := e.c.RestartAgents(ctxT(t), []string{"001", "002", "003", "077"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Affected, []string{"001"}) { // 002 disconnected, 003 never connected
			t.Fatalf("affected = %v", res.Affected)
		}
		codes := []int{}
		for _, f := range res.Failed {
			codes = append(codes, f.Code)
		}
		if !reflect.DeepEqual(codes, []int{1701, 1707}) {
			t.Fatalf("failed codes = %v", codes)
		}
		all, err := e.c.RestartAllAgents(ctxT(t))
		if err != nil || len(all.Failed) != 0 || len(all.Affected) != 2 {
			t.Fatalf("restart all = %+v, %v", all, err)
		}
	})
	t.Run("local checks send nothing", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		for _, ids := range [][]string{nil, {"000"}, {"001", "12"}} {
			_, err := e.c.RestartAgents(ctxT(t), ids)
			if err == nil {
				t.Fatalf("RestartAgents(%v) succeeded", ids)
			}
		}
		_, err := e.c.RestartAgents(ctxT(t), []string{"000"})
		if !errors.Is(err, manager.ErrManagerAgent) || !strings.Contains(err.Error(), "manager itself") {
			t.Fatalf("000: %v", err)
		}
		if n := e.srv.Requests.Load(); n != 0 {
			t.Fatalf("requests = %d, want 0", n)
		}
	})
}

func TestDeleteAgents(t *testing.T) {
	e := setup(t, managertest.Config{Agents: managertest.GenerateAgents(4)}, nil)
	res, err := e.c.DeleteAgents(ctxT(t), []string{"001", "003", "098"}, manager.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := e.srv.SeenPath("DELETE /agents"); len(q) != 1 || q[0] != "agents_list=001%2C003%2C098&older_than=0s&purge=false&status=all" {
		t.Fatalf("query = %v", q)
	}
	if !reflect.DeepEqual(res.Affected, []string{"001", "003"}) || len(res.Failed) != 1 || !errors.Is(res.Err(), manager.ErrAgentNotFound) {
		t.Fatalf("result = %+v", res)
	}
	if _, err := e.c.DeleteAgents(ctxT(t), []string{"000"}, manager.DeleteOptions{}); !errors.Is(err, manager.ErrManagerAgent) {
		t.Fatalf("000: %v", err)
	}

	e.srv.Handle("DELETE /agents", serveFixture(t, 200, "delete_not_eligible.json"))
	res, err = e.c.DeleteAgents(ctxT(t), []string{"007"}, manager.DeleteOptions{OlderThan: "7d", Status: []string{"disconnected"}, Purge: true})
	if err != nil || len(res.Affected) != 0 || res.Failed[0].Code != manager.CodeNotEligible || !strings.Contains(res.Failed[0].Explanation(), "older_than=0s") {
		t.Fatalf("not eligible = %+v, %v", res, err)
	}
}

func TestCreateUser(t *testing.T) {
	const good = "Str0ng.Passw0rd"
	t.Run("created", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		u, err := e.c.CreateUser(ctxT(t), "ops-bot", good)
		if err != nil || u.ID != 100 || u.Username != "ops-bot" {
			t.Fatalf("CreateUser = %+v, %v", u, err)
		}
		_, err = e.c.CreateUser(ctxT(t), "ops-bot", good)
		if !manager.HasCode(err, manager.CodeUserNotCreated) {
			t.Fatalf("duplicate: %v, want code 5000", err)
		}
	})
	t.Run("local policy", func(t *testing.T) {
		tests := []struct {
			name, user, pw string
			code           int
			want           error
		}{
			{"short", "ops-bot", "Sh0rt.", manager.CodePasswordLength, manager.ErrInsecurePassword},
			{"long", "ops-bot", "A1." + strings.Repeat("x", 62), manager.CodePasswordLength, manager.ErrInsecurePassword},
			{"no symbol", "ops-bot", "NoSymbol123", manager.CodePasswordClasses, manager.ErrInsecurePassword},
			{"no upper", "ops-bot", "lower.case1", manager.CodePasswordClasses, manager.ErrInsecurePassword},
			{"no digit", "ops-bot", "No.Digits!", manager.CodePasswordClasses, manager.ErrInsecurePassword},
			{"short name", "ops", good, 0, manager.ErrInvalidUsername},
			{"long name", strings.Repeat("u", 65), good, 0, manager.ErrInvalidUsername},
		}
		e := setup(t, managertest.Config{}, nil)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.c.CreateUser(ctxT(t), tt.user, tt.pw)
				if !errors.Is(err, tt.want) || (tt.code != 0 && !manager.HasCode(err, tt.code)) {
					t.Fatalf("err = %v, want %v code %d", err, tt.want, tt.code)
				}
				if strings.Contains(err.Error(), tt.pw) {
					t.Fatalf("password in error: %v", err)
				}
			})
		}
		if n := e.srv.Requests.Load(); n != 0 {
			t.Fatalf("requests = %d, want 0: nothing is sent on a bad password", n)
		}
	})
	t.Run("server policy mapped", func(t *testing.T) {
		e := setup(t, managertest.Config{}, nil)
		e.srv.Handle("POST /security/users", serveFixture(t, 400, "error_password_classes.json"))
		_, err := e.c.CreateUser(ctxT(t), "ops-bot", good)
		if !errors.Is(err, manager.ErrInsecurePassword) || !manager.HasCode(err, manager.CodePasswordClasses) || !errors.Is(err, netclient.ErrBadResponse) {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), good) {
			t.Fatalf("password in error: %v", err)
		}
	})
}

func TestProblemBodies(t *testing.T) {
	tests := []struct {
		file   string
		status int
		code   int
		kind   error
	}{
		{"error_invalid_token.json", 401, 0, netclient.ErrUnauthorized},
		{"error_no_token.json", 401, 0, netclient.ErrUnauthorized},
		{"error_ip_blocked.json", 403, 6000, netclient.ErrForbidden},
		{"error_rate_limited.json", 429, 6001, netclient.ErrRateLimited},
		{"error_not_ready.json", 400, 1017, netclient.ErrNotReady},
		{"error_password_length.json", 400, 5009, netclient.ErrBadResponse},
		{"error_cluster_disabled.json", 400, 3013, netclient.ErrBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			e := manager.DecodeProblem(tt.status, fixture(t, tt.file))
			if e.Code != tt.code || e.Title == "" || e.Detail == "" || !errors.Is(e, tt.kind) {
				t.Fatalf("APIError = %+v (kind %v), want code %d kind %v", e, e.Kind(), tt.code, tt.kind)
			}
		})
	}
	if e := manager.DecodeProblem(502, []byte("<html>Bad Gateway</html>")); e.Detail != "<html>Bad Gateway</html>" || !errors.Is(e, netclient.ErrBadResponse) {
		t.Fatalf("non-JSON body: %+v", e)
	}
}
