package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

func TestAuthErrors(t *testing.T) {
	f := newAPI(t, 5, nil)
	tok := f.login("siem", "siem")
	tests := []struct {
		name, method, path, token, basic string
		status                           int
		detail                           string
	}{
		{"no token", "GET", "/agents", "", "", 401, "No authorization token provided"},
		{"root needs token", "GET", "/", "", "", 401, "No authorization token provided"},
		{"garbage token", "GET", "/agents", "abc.def.ghi", "", 401, "Invalid token"},
		{"bad credentials", "POST", "/security/user/authenticate", "", "siem:wrong", 401, "Invalid credentials"},
		{"unknown user", "POST", "/security/user/authenticate", "", "nobody:x", 401, "Invalid credentials"},
		{"ok", "GET", "/", tok, "", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, f.srv.URL+tc.path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if u, p, ok := strings.Cut(tc.basic, ":"); ok {
				req.SetBasicAuth(u, p)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tc.status, body)
			}
			if tc.detail != "" {
				if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json; charset=utf-8" {
					t.Errorf("content type %q", ct)
				}
				want := map[string]any{"title": "Unauthorized", "detail": tc.detail}
				if !reflect.DeepEqual(body, want) {
					t.Errorf("body %v, want %v", body, want)
				}
			}
		})
	}
}

func TestLoginShapesAndExpiry(t *testing.T) {
	f := newAPI(t, 5, nil)
	for _, method := range []string{"POST", "GET"} {
		req, _ := http.NewRequest(method, f.srv.URL+"/security/user/authenticate", nil)
		req.SetBasicAuth("siem-wui", "siem-wui")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Data struct {
				Token string `json:"token"`
			} `json:"data"`
			Error *int `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 200 || body.Data.Token == "" || body.Error == nil || *body.Error != 0 {
			t.Fatalf("%s login: %d %+v", method, resp.StatusCode, body)
		}
	}
	tok := f.login("siem", "siem")
	parts := strings.Split(tok, ".")
	hdr, _ := decodeSeg(parts[0])
	claims, _ := decodeSeg(parts[1])
	if hdr["alg"] != "ES512" || claims["iss"] != "wazuh" || claims["aud"] != "Wazuh API REST" || claims["sub"] != "siem" {
		t.Fatalf("token header %v claims %v", hdr, claims)
	}
	if exp, nbf := claims["exp"].(float64), claims["nbf"].(float64); exp-nbf != 900 {
		t.Fatalf("lifetime %v", exp-nbf)
	}
	if st, _, _ := f.do("GET", "/", tok, ""); st != 200 {
		t.Fatalf("fresh token: %d", st)
	}
	f.now = f.now.Add(901 * time.Second)
	if st, _, b := f.do("GET", "/", tok, ""); st != 401 || !strings.Contains(string(b), "Invalid token") {
		t.Fatalf("expired token: %d %s", st, b)
	}
}

func decodeSeg(s string) (map[string]any, error) {
	b, err := jsonB64(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

func TestRootInfo(t *testing.T) {
	f := newAPI(t, 5, nil)
	_, _, b := f.do("GET", "/", f.login("siem", "siem"), "")
	m := decodeMap(t, b)
	d := m["data"].(map[string]any)
	if d["api_version"] != "4.9.0" || d["revision"] != float64(40907) || d["title"] != "Wazuh API REST" || m["error"] != float64(0) {
		t.Fatalf("GET / = %s", b)
	}
	if _, ok := m["message"]; ok {
		t.Fatalf("WazuhResult must not carry message: %s", b)
	}
}

func TestRateLimit(t *testing.T) {
	f := newAPI(t, 5, func(o *APIOptions) { o.Config.Access.MaxRequestPerMinute = 3 })
	tok := f.login("siem", "siem") // request 1
	for i := 0; i < 2; i++ {
		if st, _, b := f.do("GET", "/", tok, ""); st != 200 {
			t.Fatalf("request %d: %d %s", i+2, st, b)
		}
	}
	st, _, b := f.do("GET", "/", tok, "")
	m := decodeMap(t, b)
	if st != 429 || m["error"] != float64(6001) || m["title"] != "Too Many Requests" {
		t.Fatalf("4th request: %d %s", st, b)
	}
	f.now = f.now.Add(61 * time.Second) // a new window starts
	if st, _, _ := f.do("GET", "/", tok, ""); st != 200 {
		t.Fatalf("after window: %d", st)
	}
}

func TestFaultRateLimitAndSlow(t *testing.T) {
	var slept []time.Duration
	f := newAPI(t, 5, func(o *APIOptions) {
		o.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	})
	tok := f.login("siem", "siem")
	if err := faults.Set(f.fdir, faults.APISlow, true); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := f.do("GET", "/", tok, ""); st != 200 || len(slept) != 1 || slept[0] != 3*time.Second {
		t.Fatalf("api-slow: status %d slept %v", st, slept)
	}
	if err := faults.Set(f.fdir, faults.APIRateLimit, true); err != nil {
		t.Fatal(err)
	}
	if st, _, b := f.do("GET", "/", tok, ""); st != 429 || !strings.Contains(string(b), `"error":6001`) {
		t.Fatalf("api-ratelimit: %d %s", st, b)
	}
}

func TestDaemonsNotReady(t *testing.T) {
	f := newAPI(t, 5, nil)
	tok := f.login("siem", "siem")
	if err := os.WriteFile(filepath.Join(f.home.RunDir(), ".restart"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, _, b := f.do("GET", "/agents", tok, "")
	m := decodeMap(t, b)
	if st != 400 || m["error"] != float64(1017) ||
		!strings.HasPrefix(m["detail"].(string), `Some Wazuh daemons are not ready yet in node "node01" (wazuh-modulesd->restarting, wazuh-analysisd->restarting`) {
		t.Fatalf("1017: %d %s", st, b)
	}
	st, _, b = f.do("GET", "/manager/status", tok, "")
	if st != 200 || !strings.Contains(string(b), `"wazuh-analysisd":"restarting"`) {
		t.Fatalf("/manager/status exempt: %d %s", st, b)
	}
	req, _ := http.NewRequest("POST", f.srv.URL+"/security/user/authenticate", nil)
	req.SetBasicAuth("siem", "siem")
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("login while restarting: %d", resp.StatusCode)
	}
	_ = os.Remove(filepath.Join(f.home.RunDir(), ".restart"))
	removePidfiles(f.home, os.Getpid())
	// Stopped and failed daemons are 1017 too (1018/1019 mean other things in 4.x), with each state named.
	markFailed(f.home, "wazuh-analysisd")
	st, _, b = f.do("GET", "/agents", tok, "")
	m = decodeMap(t, b)
	if st != 400 || m["error"] != float64(1017) || m["detail"] != `Some Wazuh daemons are not ready yet in node "node01" (wazuh-modulesd->stopped, wazuh-analysisd->failed, wazuh-execd->stopped, wazuh-db->stopped, wazuh-remoted->stopped)` {
		t.Fatalf("stopped/failed daemons: %d %s", st, b)
	}
}

func TestGetAgents(t *testing.T) {
	f := newAPI(t, 6, nil)
	tok := f.login("siem", "siem")
	tests := []struct {
		name       string
		query      string
		ids        []string
		total      int
		failed     int
		errCode    int
		failedCode int
		message    string
	}{
		{"all", "", []string{"000", "001", "002", "003", "004", "005", "006"}, 7, 0, 0, 0, "All selected agents information was returned"},
		{"page", "?offset=2&limit=2", []string{"002", "003"}, 7, 0, 0, 0, "All selected agents information was returned"},
		{"status", "?status=disconnected,never_connected", []string{"003", "004", "006"}, 3, 0, 0, 0, "All selected agents information was returned"},
		{"list with unknown", "?agents_list=001,042,003", []string{"001", "003"}, 2, 1, 2, 1701, "Some agents information was not returned"},
		{"only unknown", "?agents_list=042", []string{}, 0, 1, 1, 1701, "No agent information was returned"},
		{"q and", "?q=status=active;os.platform=ubuntu", []string{"000", "001"}, 2, 0, 0, 0, "All selected agents information was returned"}, // 000: the manager runs Ubuntu 20.04
		{"q or", "?q=name=db-01,name=win-01", []string{"002", "005"}, 2, 0, 0, 0, "All selected agents information was returned"},
		{"q like", "?q=name~WEB", []string{"001"}, 1, 0, 0, 0, "All selected agents information was returned"},
		{"sort desc", "?sort=-name&limit=3", []string{"005", "001", "000"}, 7, 0, 0, 0, "All selected agents information was returned"},
		{"older than", "?older_than=1d", []string{"003", "004"}, 2, 0, 0, 0, "All selected agents information was returned"},
		{"no match", "?status=pending", []string{}, 0, 0, 0, 0, "No agent information was returned"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, b := f.do("GET", "/agents"+tc.query, tok, "")
			if st != 200 {
				t.Fatalf("status %d: %s", st, b)
			}
			e := decodeEnv(t, b)
			var ids []string
			for _, raw := range e.Data.AffectedItems {
				var a struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(raw, &a)
				ids = append(ids, a.ID)
			}
			if ids == nil {
				ids = []string{}
			}
			if !reflect.DeepEqual(ids, tc.ids) || e.Data.TotalAffectedItems != tc.total || e.Data.TotalFailedItems != tc.failed ||
				e.Error != tc.errCode || e.Message != tc.message {
				t.Fatalf("got ids %v total %d failed %d error %d msg %q", ids, e.Data.TotalAffectedItems, e.Data.TotalFailedItems, e.Error, e.Message)
			}
			if tc.failedCode != 0 && e.Data.FailedItems[0].Error.Code != tc.failedCode {
				t.Fatalf("failed code %+v", e.Data.FailedItems)
			}
		})
	}
}

func TestGetAgentsShapeAndSelect(t *testing.T) {
	f := newAPI(t, 5, nil)
	tok := f.login("siem", "siem")
	_, _, b := f.do("GET", "/agents?agents_list=000,001", tok, "")
	e := decodeEnv(t, b)
	var m0, m1 map[string]any
	_ = json.Unmarshal(e.Data.AffectedItems[0], &m0)
	_ = json.Unmarshal(e.Data.AffectedItems[1], &m1)
	if m0["lastKeepAlive"] != "9999-12-31T23:59:59Z" || m0["version"] != "Wazuh v4.9.0" || m0["ip"] != "127.0.0.1" || m0["group"] != nil {
		t.Fatalf("agent 000: %v", m0)
	}
	if m1["status"] != "active" || m1["registerIP"] != "any" || m1["version"] != "Wazuh v4.8.2" || m1["status_code"] != float64(0) {
		t.Fatalf("agent 001: %v", m1)
	}
	_, _, b = f.do("GET", "/agents?agents_list=001&select=name,os.name", tok, "")
	e = decodeEnv(t, b)
	var sel map[string]any
	_ = json.Unmarshal(e.Data.AffectedItems[0], &sel)
	want := map[string]any{"id": "001", "name": "web-01", "os": map[string]any{"name": "Ubuntu"}}
	if !reflect.DeepEqual(sel, want) {
		t.Fatalf("select: %v", sel)
	}
	bad := []struct{ query, want string }{
		{"?limit=0", "0 is less than the minimum of 1"},
		{"?limit=100001", "100001 is greater than the maximum of 100000"},
		{"?status=bogus", "'bogus' is not one of"},
		{"?agents_list=wrong_id", "'wrong_id' is not a 'numbers'"},
		{"?agents_list=1", "'1' is too short"},
		{"?pretty=yes", "'yes' is not of type 'boolean'"},
		{"?name=%2A", "'*' is not a 'alphanumeric'"},
		{"?select=nope", `"error":1724`},
		{"?q=name", `"error":1407`},
		{"?q=bogus=1", `"error":1408`},
		{"?foo=1", "Extra query parameter(s) foo not in spec"},
	}
	for _, tc := range bad {
		st, _, b := f.do("GET", "/agents"+tc.query, tok, "")
		if st != 400 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %s", tc.query, st, b)
		}
	}
}

func TestAgentFaults(t *testing.T) {
	f := newAPI(t, 5, nil)
	tok := f.login("siem", "siem")
	if err := faults.Set(f.fdir, faults.AgentsDisconnected, true); err != nil {
		t.Fatal(err)
	}
	_, _, b := f.do("GET", "/agents/summary/status", tok, "")
	want := `{"data":{"connection":{"active":0,"disconnected":4,"never_connected":1,"pending":0,"total":5},"configuration":{"synced":4,"not_synced":1,"total":5}},"error":0}`
	if string(b) != want {
		t.Fatalf("summary with fault:\n%s\nwant\n%s", b, want)
	}
	_ = faults.Set(f.fdir, faults.AgentsDisconnected, false)
	_ = faults.Set(f.fdir, faults.AgentNewer, true)
	_, _, b = f.do("GET", "/agents?agents_list=001&select=version", tok, "")
	if !strings.Contains(string(b), `"version":"Wazuh v4.10.0"`) {
		t.Fatalf("agent-newer: %s", b)
	}
}

func TestRestartAgents(t *testing.T) {
	f := newAPI(t, 5, nil)
	tok := f.login("siem", "siem")
	tests := []struct {
		name, method, path string
		affected           []string
		codes              map[int][]string
		errCode            int
		message            string
	}{
		{"mixed", "PUT", "/agents/restart?agents_list=000,002,003,099", []string{"002"},
			map[int][]string{1701: {"099"}, 1703: {"000"}, 1707: {"003"}}, 2, "Restart command was not sent to some agents"},
		{"all omitted list hides expected failures", "PUT", "/agents/restart", []string{"001", "002", "005"}, map[int][]string{}, 0,
			"Restart command was sent to all agents"},
		{"single inactive", "PUT", "/agents/004/restart", []string{}, map[int][]string{1707: {"004"}}, 1, "Restart command was not sent to any agent"},
		{"single ok", "PUT", "/agents/001/restart", []string{"001"}, map[int][]string{}, 0, "Restart command was sent to all agents"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, b := f.do(tc.method, tc.path, tok, "")
			if st != 200 {
				t.Fatalf("status %d %s", st, b)
			}
			e := decodeEnv(t, b)
			var got []string
			for _, r := range e.Data.AffectedItems {
				var s string
				_ = json.Unmarshal(r, &s)
				got = append(got, s)
			}
			if got == nil {
				got = []string{}
			}
			codes := map[int][]string{}
			for _, fi := range e.Data.FailedItems {
				for _, id := range fi.ID {
					codes[fi.Error.Code] = append(codes[fi.Error.Code], fmt.Sprint(id))
				}
			}
			if !reflect.DeepEqual(got, tc.affected) || !reflect.DeepEqual(codes, tc.codes) || e.Error != tc.errCode || e.Message != tc.message {
				t.Fatalf("got %v %v error %d %q", got, codes, e.Error, e.Message)
			}
		})
	}
}

func TestDeleteAgents(t *testing.T) {
	f := newAPI(t, 6, nil)
	tok := f.login("siem", "siem")
	st, _, b := f.do("DELETE", "/agents?agents_list=001", tok, "")
	if st != 400 || !strings.Contains(string(b), "Missing query parameter 'status'") {
		t.Fatalf("missing status: %d %s", st, b)
	}
	st, _, b = f.do("DELETE", "/agents?status=all", tok, "")
	if st != 400 || !strings.Contains(string(b), "Missing query parameter 'agents_list'") {
		t.Fatalf("missing agents_list: %d %s", st, b)
	}
	// 001 is active (older_than 7d default → 1731), 003 disconnected 12 days ago → deleted, 000 → 1703.
	_, _, b = f.do("DELETE", "/agents?agents_list=000,001,003,077&status=all", tok, "")
	e := decodeEnv(t, b)
	codes := map[int]string{}
	for _, fi := range e.Data.FailedItems {
		codes[fi.Error.Code] = fmt.Sprint(fi.ID...)
		if fi.Error.Code == 1731 && !strings.Contains(fi.Error.Message, "some of the requirements are not met -> older_than: 7d") {
			t.Errorf("1731 message %q", fi.Error.Message)
		}
	}
	if e.Error != 2 || string(e.Data.AffectedItems[0]) != `"003"` || codes[1731] != "001" || codes[1703] != "000" || codes[1701] != "077" ||
		e.Message != "Some agents were not deleted" {
		t.Fatalf("delete: %s", b)
	}
	keys, _ := os.ReadFile(f.home.ClientKeys())
	if !strings.Contains(string(keys), "003 !app-01 any ") {
		t.Fatalf("client.keys without purge:\n%s", keys)
	}
	_, _, b = f.do("DELETE", "/agents?agents_list=001&status=active&older_than=0s&purge=true", tok, "")
	if e := decodeEnv(t, b); e.Error != 0 || e.Message != "All selected agents were deleted" {
		t.Fatalf("delete with older_than=0s: %s", b)
	}
	keys, _ = os.ReadFile(f.home.ClientKeys())
	if strings.Contains(string(keys), "web-01") {
		t.Fatalf("purged agent still in client.keys:\n%s", keys)
	}
	_, _, b = f.do("GET", "/agents?select=id", tok, "")
	if e := decodeEnv(t, b); e.Data.TotalAffectedItems != 5 {
		t.Fatalf("after delete: %s", b)
	}
}

func TestManagerEndpoints(t *testing.T) {
	f := newAPI(t, 5, nil)
	tok := f.login("siem", "siem")
	_, _, b := f.do("GET", "/manager/info", tok, "")
	if !strings.Contains(string(b), `"version":"v4.9.0","type":"server"`) || !strings.Contains(string(b), `"message":"Basic information was successfully read","error":0`) {
		t.Fatalf("info: %s", b)
	}
	_, _, b = f.do("GET", "/manager/status", tok, "")
	e := decodeEnv(t, b)
	var states map[string]string
	_ = json.Unmarshal(e.Data.AffectedItems[0], &states)
	if len(states) != 17 || states["wazuh-apid"] != "running" || states["wazuh-maild"] != "stopped" {
		t.Fatalf("status: %v", states)
	}
	_, _, b = f.do("GET", "/cluster/status", tok, "")
	if string(b) != `{"data":{"enabled":"no","running":"no"},"error":0}` {
		t.Fatalf("cluster: %s", b)
	}
	_, _, b = f.do("GET", "/manager/configuration/validation", tok, "")
	if !strings.Contains(string(b), `"affected_items":[{"name":"manager","status":"OK"}]`) {
		t.Fatalf("validation ok: %s", b)
	}
	conf, _ := os.ReadFile(f.home.OssecConf())
	broken := strings.Replace(string(conf), "<log_alert_level>3</log_alert_level>", "<log_alert_lvl>3</log_alert_lvl>", 1)
	_ = os.WriteFile(f.home.OssecConf(), []byte(broken), 0o644)
	st, _, b := f.do("GET", "/manager/configuration/validation", tok, "")
	e = decodeEnv(t, b)
	want := "Error validating configuration: (1230): Invalid element in the configuration: 'log_alert_lvl'., (1202): Configuration error at 'etc/ossec.conf'."
	if st != 200 || e.Error != 1 || e.Data.FailedItems[0].Error.Code != 1908 || e.Data.FailedItems[0].Error.Message != want ||
		e.Message != "Could not check validation" {
		t.Fatalf("validation broken: %d %s", st, b)
	}
}

func TestSecurityUsers(t *testing.T) {
	f := newAPI(t, 5, nil)
	tok := f.login("siem", "siem")
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"short password", `{"username":"alice","password":"Ab1!"}`, 400, `"error":5009`},
		{"weak password", `{"username":"alice","password":"abcdefgh1"}`, 400, `"error":5007`},
		{"short username", `{"username":"al","password":"Secr3t!pass"}`, 400, `'al' is too short`},
		{"created", `{"username":"alice","password":"Secr3t!pass"}`, 200, `"affected_items":[{"id":100,"username":"alice","allow_run_as":false,"roles":[]}]`},
		{"duplicate", `{"username":"alice","password":"Secr3t!pass"}`, 200, `"code":5000`},
	}
	for _, tc := range tests {
		st, _, b := f.do("POST", "/security/users", tok, tc.body)
		if st != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %s", tc.name, st, b)
		}
	}
	_, _, b := f.do("GET", "/security/users", tok, "")
	if e := decodeEnv(t, b); e.Data.TotalAffectedItems != 3 || e.Message != "All specified users were returned" {
		t.Fatalf("users: %s", b)
	}
	f.now = f.now.Add(time.Second)
	st, _, b := f.do("PUT", "/security/users/100", tok, `{"password":"N3w!password"}`)
	if st != 200 || !strings.Contains(string(b), "User was successfully updated") {
		t.Fatalf("update: %d %s", st, b)
	}
	if st, _, b := f.do("PUT", "/security/users/555", tok, `{"password":"N3w!password"}`); st != 200 || !strings.Contains(string(b), `"code":5001`) {
		t.Fatalf("update missing: %d %s", st, b)
	}
	f.login("alice", "N3w!password")
	// Changing a user's password revokes that user's tokens.
	f.now = f.now.Add(time.Second)
	siemTok := f.login("siem", "siem")
	f.now = f.now.Add(time.Second)
	if err := SetAPIUserPassword(f.home, "siem", "Other!pass1"); err != nil {
		t.Fatal(err)
	}
	_, err := NewUserStore(f.home).SetPassword("siem", 0, "Other!pass1", false, f.now)
	if err != nil {
		t.Fatal(err)
	}
	if st, _, _ := f.do("GET", "/", siemTok, ""); st != 401 {
		t.Fatalf("token survived password change: %d", st)
	}
}

func TestNotFound(t *testing.T) {
	f := newAPI(t, 5, nil)
	tok := f.login("siem", "siem")
	if st, _, _ := f.do("GET", "/agents/001", tok, ""); st != 404 {
		t.Fatalf("GET /agents/001: %d", st)
	}
	if st, _, _ := f.do("POST", "/agents/summary/status", tok, ""); st != 405 {
		t.Fatalf("POST summary: %d", st)
	}
}

// agents-no-reconnect keeps a tenth of the active agents (at least one)
// disconnected once the manager started after the fault was set, with the
// last keep-alive before that start; a manager already running is unaffected.
func TestAgentsNoReconnectFault(t *testing.T) {
	for _, restarted := range []bool{false, true} {
		var started time.Time
		f := newAPI(t, 5, func(o *APIOptions) { o.Started = testNow })
		if err := faults.Set(f.fdir, faults.AgentsNoReconnect, true); err != nil {
			t.Fatal(err)
		}
		if restarted {
			started = time.Now().Add(time.Minute)
			f.api.o.Started = started
		}
		tok := f.login("siem", "siem")
		_, _, b := f.do("GET", "/agents?agents_list=001&select=status,lastKeepAlive", tok, "")
		want := `"status":"active"`
		if restarted {
			want = `"status":"disconnected","lastKeepAlive":"` + started.Add(-6*time.Second).UTC().Format(agentTimeFormat) + `"`
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("restarted=%v: %s, want %s", restarted, b, want)
		}
		_, _, b = f.do("GET", "/agents?agents_list=002&select=status", tok, "")
		if !strings.Contains(string(b), `"status":"active"`) {
			t.Errorf("restarted=%v: agent 002 must stay active: %s", restarted, b)
		}
	}
}
