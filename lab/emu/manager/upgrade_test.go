package manager

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// upgradeFixture is the API on the ten seeded agents (active and eligible for 4.9.0: 001 at 4.8.2,
// 008 at 4.7.5, 010 at 4.8.2; 002 and 005 already at 4.9.0) with the module's threads and timing set
// in ossec.conf: sends of 4 s, restarts of 6 s, tasks timing out after 60 s.
func upgradeFixture(t *testing.T, threads int) (*apiFixture, string) {
	t.Helper()
	f := newAPI(t, 10, nil)
	conf := strings.Replace(string(DefaultOssecConf(1514, 1515, 5514)), "</ossec_config>", fmt.Sprintf(`  <agent-upgrade>
    <max_threads>%d</max_threads>
  </agent-upgrade>
  <emulator>
    <upgrade_send_time>4s</upgrade_send_time>
    <upgrade_restart_time>6s</upgrade_restart_time>
    <upgrade_task_timeout>60s</upgrade_task_timeout>
  </emulator>
</ossec_config>`, threads), 1)
	if err := os.WriteFile(f.home.OssecConf(), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return f, f.login("siem", "siem")
}

type taskView struct {
	Agent    string `json:"agent"`
	TaskID   int    `json:"task_id"`
	Status   string `json:"status"`
	ErrorMsg string `json:"error_msg"`
	Command  string `json:"command"`
	Node     string `json:"node"`
}

// results reads upgrade_result for the agents: their task status (or "!<code>" for a failed item).
func (f *apiFixture) results(tok, agents string) map[string]string {
	f.t.Helper()
	code, _, b := f.do("GET", "/agents/upgrade_result?agents_list="+agents, tok, "")
	if code != 200 {
		f.t.Fatalf("upgrade_result: %d %s", code, b)
	}
	e := decodeEnv(f.t, b)
	out := map[string]string{}
	for _, raw := range e.Data.AffectedItems {
		var tv taskView
		if err := json.Unmarshal(raw, &tv); err != nil {
			f.t.Fatal(err)
		}
		out[tv.Agent] = tv.Status
		if tv.ErrorMsg != "" {
			out[tv.Agent] += ": " + tv.ErrorMsg
		}
	}
	for _, fi := range e.Data.FailedItems {
		for _, id := range fi.ID {
			out[fmt.Sprint(id)] = fmt.Sprintf("!%d", fi.Error.Code)
		}
	}
	return out
}

func (f *apiFixture) agentState(tok, id string) (status, version string) {
	f.t.Helper()
	_, _, b := f.do("GET", "/agents?select=status,version&agents_list="+id, tok, "")
	e := decodeEnv(f.t, b)
	if len(e.Data.AffectedItems) != 1 {
		f.t.Fatalf("agent %s: %s", id, b)
	}
	var a struct{ Status, Version string }
	_ = json.Unmarshal(e.Data.AffectedItems[0], &a)
	return a.Status, a.Version
}

func TestUpgradeTimingAndThreads(t *testing.T) {
	f, tok := upgradeFixture(t, 2)
	code, _, b := f.do("PUT", "/agents/upgrade?agents_list=001,002,008,010", tok, "")
	e := decodeEnv(t, b)
	if code != 200 || e.Data.TotalAffectedItems != 3 || e.Error != 2 || len(e.Data.FailedItems) != 1 || e.Data.FailedItems[0].Error.Code != 1822 {
		t.Fatalf("create: %d %s", code, b)
	}
	step := func(after time.Duration, want map[string]string) {
		t.Helper()
		f.now = testNow.Add(after)
		got := f.results(tok, "001,008,010")
		for k, v := range want {
			if got[k] != v {
				t.Errorf("after %v: agent %s %q, want %q (all: %v)", after, k, got[k], v, got)
			}
		}
	}
	// Two threads: 010 waits for one.
	step(time.Second, map[string]string{"001": TaskInProgress, "008": TaskInProgress, "010": TaskPending})
	// 001 and 008 restart (disconnected: upgrade_result answers 1707 as the real API does); 010 is sent.
	step(5*time.Second, map[string]string{"001": "!1707", "008": "!1707", "010": TaskInProgress})
	if st, v := f.agentState(tok, "001"); st != StatusDisconnected || v != "Wazuh v4.8.2" {
		t.Errorf("001 restarting: %s %s", st, v)
	}
	step(11*time.Second, map[string]string{"001": TaskUpdated, "008": TaskUpdated, "010": "!1707"})
	if st, v := f.agentState(tok, "001"); st != StatusActive || v != "Wazuh v4.9.0" {
		t.Errorf("001 upgraded: %s %s", st, v)
	}
	step(15*time.Second, map[string]string{"010": TaskUpdated})
	// Upgraded: a second upgrade is refused 1822; the agent is no longer outdated.
	_, _, b = f.do("PUT", "/agents/upgrade?agents_list=010", tok, "")
	if e := decodeEnv(t, b); e.Data.TotalFailedItems != 1 || e.Data.FailedItems[0].Error.Code != 1822 {
		t.Errorf("again: %s", b)
	}
}

func TestUpgradeRefusals(t *testing.T) {
	f, tok := upgradeFixture(t, 8)
	// Already upgrading: 1820; with agents_list=all the refusals are left out.
	f.do("PUT", "/agents/upgrade?agents_list=001", tok, "")
	_, _, b := f.do("PUT", "/agents/upgrade?agents_list=001,003,000,999", tok, "")
	got := map[int][]string{}
	for _, fi := range decodeEnv(t, b).Data.FailedItems {
		for _, id := range fi.ID {
			got[fi.Error.Code] = append(got[fi.Error.Code], fmt.Sprint(id))
		}
	}
	if fmt.Sprint(got) != "map[1701:[999] 1703:[000] 1707:[003] 1820:[001]]" {
		t.Errorf("refusals: %v (%s)", got, b)
	}
	_, _, b = f.do("PUT", "/agents/upgrade?agents_list=all", tok, "")
	if e := decodeEnv(t, b); e.Data.TotalFailedItems != 0 || e.Data.TotalAffectedItems != 2 {
		t.Errorf("all: %s", b)
	}
	// Above the manager: HTTP 500 1823; with force, no such WPK: 1825.
	for q, want := range map[string]int{"upgrade_version=4.10.0": 1823, "upgrade_version=4.10.0&force=true": 1825} {
		code, _, b := f.do("PUT", "/agents/upgrade?agents_list=002&"+q, tok, "")
		if m := decodeMap(t, b); code != 500 || m["error"] != float64(want) {
			t.Errorf("%s: %d %s, want 500 %d", q, code, b, want)
		}
	}
	// A 5.x target for agents below 4.14.0 (with force: the target is above the manager).
	_ = os.WriteFile(f.home.Path("VERSION"), []byte("v5.0.0\n"), 0o644)
	_, _, b = f.do("PUT", "/agents/upgrade?agents_list=002&upgrade_version=5.0.0", tok, "")
	if e := decodeEnv(t, b); e.Data.TotalFailedItems != 1 || e.Data.FailedItems[0].Error.Code != 1822 || !strings.Contains(e.Data.FailedItems[0].Error.Message, "4.14.x first") {
		t.Errorf("5.x: %s", b)
	}
	// Invalid parameters: 400.
	for _, q := range []string{"agents_list=001&upgrade_version=latest", "agents_list=001&force=yes", "upgrade_version=4.9.0"} {
		if code, _, b := f.do("PUT", "/agents/upgrade?"+q, tok, ""); code != 400 {
			t.Errorf("%s: %d %s", q, code, b)
		}
	}
	if code, _, b := f.do("PUT", "/agents/upgrade_custom?agents_list=001", tok, ""); code != 400 {
		t.Errorf("custom without file_path: %d %s", code, b)
	}
}

func TestUpgradeFaults(t *testing.T) {
	for _, tc := range []struct {
		fault   string
		threads int
		agents  string
		after   time.Duration
		want    map[string]string
		agent   map[string]string // status/version of the agents at after
	}{
		{fault: faults.UpgradeNoWPK, threads: 8, agents: "001,008", want: map[string]string{"001": "!1813", "008": "!1813"}},
		{fault: faults.UpgradeAgentDrops, threads: 8, agents: "001,008", after: 61 * time.Second,
			want:  map[string]string{"001": "!1707", "008": TaskUpdated},
			agent: map[string]string{"001": "disconnected Wazuh v4.8.2", "008": "active Wazuh v4.9.0"}},
		{fault: faults.UpgradeTimeoutUpgraded, threads: 8, agents: "001,008", after: 11 * time.Second,
			want:  map[string]string{"001": TaskTimeout, "008": TaskUpdated},
			agent: map[string]string{"001": "active Wazuh v4.9.0"}},
		{fault: faults.UpgradeStuckUpdating, threads: 8, agents: "001,008", after: 10 * time.Minute, // past the task timeout
			want:  map[string]string{"001": TaskUpdating, "008": TaskUpdated},
			agent: map[string]string{"001": "active Wazuh v4.9.0"}},
		{fault: faults.UpgradeBulkRefused, threads: 1, agents: "001,008,010", after: time.Second,
			want:  map[string]string{"001": TaskInProgress, "008": TaskError + ": " + msgSendLockRestart, "010": TaskError + ": " + msgSendLockRestart},
			agent: map[string]string{"008": "active Wazuh v4.7.5"}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			f, tok := upgradeFixture(t, tc.threads)
			if err := faults.Set(f.fdir, tc.fault, true); err != nil {
				t.Fatal(err)
			}
			_, _, b := f.do("PUT", "/agents/upgrade?agents_list="+tc.agents, tok, "")
			if tc.fault == faults.UpgradeNoWPK {
				if e := decodeEnv(t, b); e.Data.TotalFailedItems != 2 || e.Data.FailedItems[0].Error.Code != 1819 {
					t.Errorf("no WPK: %s", b)
				}
			}
			f.now = testNow.Add(tc.after)
			got := f.results(tok, tc.agents)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("agent %s: %q, want %q (%v)", k, got[k], v, got)
				}
			}
			for id, want := range tc.agent {
				if st, v := f.agentState(tok, id); st+" "+v != want {
					t.Errorf("agent %s: %s %s, want %s", id, st, v, want)
				}
			}
		})
	}
}

func TestUpgradeDropTimesOut(t *testing.T) {
	f, tok := upgradeFixture(t, 8)
	if err := faults.Set(f.fdir, faults.UpgradeAgentDrops, true); err != nil {
		t.Fatal(err)
	}
	f.do("PUT", "/agents/upgrade?agents_list=001", tok, "")
	f.now = testNow.Add(61 * time.Second)
	_, _, b := f.do("GET", "/agents/upgrade_result", tok, "")
	// 001 is disconnected: without agents_list it is left out of the result (the framework's
	// exclude_codes), as on the real API; its task is found by its status.
	if e := decodeEnv(t, b); e.Data.TotalAffectedItems != 0 || e.Data.TotalFailedItems != 0 {
		t.Errorf("all: %s", b)
	}
	f.api.upgrades.mu.Lock()
	st, _, _ := f.api.upgrades.tasks[1].status(f.now, timingOf(&Config{UpgradeTaskTimeout: time.Minute, UpgradeSendTime: 4 * time.Second, UpgradeRestartTime: 6 * time.Second}))
	f.api.upgrades.mu.Unlock()
	if st != TaskTimeout {
		t.Errorf("dropped agent's task: %s", st)
	}
}

// upgrade-no-wpk:PLATFORM[/ARCH],…: only the agents of those platforms are refused 1819 (001 ubuntu,
// 008 rocky, 010 debian, all x86_64); the others get their task.
func TestUpgradeNoWPKPerPlatform(t *testing.T) {
	for _, tc := range []struct {
		arg     string
		refused []string
	}{
		{"debian", []string{"010"}},
		{"Ubuntu/X86_64", []string{"001"}}, // os.name, any case
		{"rocky/x86_64,ubuntu", []string{"001", "008"}},
		{"rocky/aarch64", nil},
		{"", []string{"001", "008", "010"}}, // no argument: every platform
	} {
		t.Run(tc.arg, func(t *testing.T) {
			f, tok := upgradeFixture(t, 8)
			kind := faults.UpgradeNoWPK
			if tc.arg != "" {
				kind += ":" + tc.arg
			}
			if err := faults.Set(f.fdir, kind, true); err != nil {
				t.Fatal(err)
			}
			if got := (faults.Checker{Dir: f.fdir}).Arg(faults.UpgradeNoWPK); got != tc.arg {
				t.Fatalf("the fault's argument: %q", got)
			}
			_, _, b := f.do("PUT", "/agents/upgrade?agents_list=001,008,010", tok, "")
			e := decodeEnv(t, b)
			var refused []string
			for _, fi := range e.Data.FailedItems {
				if fi.Error.Code != 1819 || fi.Error.Message != msgNoWPK {
					t.Errorf("failed item %+v", fi)
				}
				for _, id := range fi.ID {
					refused = append(refused, fmt.Sprint(id))
				}
			}
			if fmt.Sprint(refused) != fmt.Sprint(tc.refused) || e.Data.TotalAffectedItems != 3-len(tc.refused) {
				t.Errorf("refused %v, want %v: %s", refused, tc.refused, b)
			}
		})
	}
}
