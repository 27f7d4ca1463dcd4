//go:build e2e

package agents_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab/e2e"
)

// scaleRun is what the scale test reads of `agents upgrade status -o json`.
type scaleRun struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
	Requests int    `json:"requests"`
	Reads    int    `json:"reads"`
	Options  struct {
		InFlight int `json:"in_flight"`
	} `json:"options"`
	Waves []struct {
		Agents  []string  `json:"agents"`
		State   string    `json:"state"`
		Started time.Time `json:"started"`
		Ended   time.Time `json:"ended"`
		Failed  int       `json:"failed"`
	} `json:"waves"`
	Agents map[string]struct {
		State string `json:"state"`
	} `json:"agents"`
}

// apiLogLine is one request of the emulator's logs/api.log (wazuh-apid's plain format).
var apiLogLine = regexp.MustCompile(`^\S+ \S+ INFO: \S+ \S+ "(\S+) (\S+)" with parameters (\{.*\}) and body \{.*\} done in \S+: (\d+)$`)

// TestE2EAgentUpgradeScale upgrades a fleet of 10,000 active agents in waves: the lab's manager
// seeded with 14,289 agents at 4.8.2 (10,000 active, the others disconnected or never connected),
// its upgrade module at 256 threads with sends and restarts of a second (the next agents are sent
// while the previous ones restart). `agents upgrade apply`
// runs a canary of 10 and the waves 1%,10%,50%,100%; every eligible agent must end upgraded, the
// disconnected ones pending, `agents outdated` and `health` agree with that, and the requests
// siemctl sent, counted in the manager's api.log, stay within what the waves and the evidence
// reads need (requests of at most 500 agents, reads in bulk: no request per agent). It logs the
// figures: wall time, requests, siemctl's peak RSS and its CPU share of the wall time.
func TestE2EAgentUpgradeScale(t *testing.T) {
	const (
		seeded  = 14289
		active  = 10000
		threads = 256
		poll    = time.Second
	)
	l := e2e.Up(t, e2e.Options{PortOffset: 290})
	home := l.Path(l.Profile.InstallDir)
	conf := home + "/etc/ossec.conf"
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, fmt.Sprintf(`
<ossec_config>
  <agent-upgrade>
    <max_threads>%d</max_threads>
  </agent-upgrade>
  <emulator>
    <upgrade_send_time>1s</upgrade_send_time>
    <upgrade_restart_time>1s</upgrade_restart_time>
    <upgrade_task_timeout>300s</upgrade_task_timeout>
  </emulator>
</ossec_config>
`, threads)...)
	if err := os.WriteFile(conf, b, 0o640); err != nil {
		t.Fatal(err)
	}
	seedStart := time.Now()
	if out, err := exec.Command(home+"/bin/siem-managerd", "--home", home, "--seed-agents", fmt.Sprint(seeded), "--seed-version", "4.8.2",
		"--reseed", "--seed-only").CombinedOutput(); err != nil {
		t.Fatalf("seed %d agents: %v %s", seeded, err, out)
	}
	t.Logf("seeded %d agents in %s", seeded, time.Since(seedStart).Round(time.Millisecond))

	// The plan: 10,000 eligible, the disconnected ones pending, the never connected not eligible.
	r := l.Siemctl("agents", "upgrade", "plan", "--canary", "10", "-o", "json")
	var plan struct {
		Eligible    []struct{ ID string } `json:"eligible"`
		Pending     []struct{ ID string } `json:"pending"`
		NotEligible []struct{ ID string } `json:"not_eligible"`
		Waves       [][]string            `json:"waves"`
		Requests    int                   `json:"requests"`
		Options     struct {
			InFlight int `json:"in_flight"`
		} `json:"options"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &plan) != nil {
		t.Fatalf("plan: exit %d\n%.2000s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("plan in %s: %d eligible, %d pending, %d not eligible, waves of %v, %d upgrade requests, %d sends at once",
		r.Took.Round(time.Millisecond), len(plan.Eligible), len(plan.Pending), len(plan.NotEligible), waveSizes(plan.Waves), plan.Requests, plan.Options.InFlight)
	if len(plan.Eligible) != active || len(plan.Pending) == 0 || plan.Options.InFlight != threads || len(plan.Waves) != 5 || len(plan.Waves[0]) != 10 {
		t.Fatalf("plan: %d eligible (want %d), %d pending, in flight %d (want %d), %d waves (want the canary of 10 and 4)",
			len(plan.Eligible), active, len(plan.Pending), plan.Options.InFlight, threads, len(plan.Waves))
	}

	// The run, measured: siemctl's wall time, peak RSS and CPU time; its requests in api.log.
	apiLog := home + "/logs/api.log"
	logStart := fileSize(t, apiLog)
	siemctl, _ := e2e.Binaries(t)
	cmd := exec.Command(siemctl, "agents", "upgrade", "apply", "--canary", "10", "--waves", "1%,10%,50%,100%", "--max-failed", "0",
		"--poll", poll.String(), "--agent-wait", "2m", "--yes")
	cmd.Env = append(os.Environ(), l.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("apply: %v after %s\n%.3000s\n%.3000s", err, wall.Round(time.Millisecond), stdout.String(), stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	rssMiB := float64(ru.Maxrss) / 1024 // KiB on Linux

	r = l.Siemctl("agents", "upgrade", "status", "-o", "json")
	var run scaleRun
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &run) != nil {
		t.Fatalf("status: exit %d %.2000s %s", r.Code, r.Stdout, r.Stderr)
	}
	counts := map[string]int{}
	for _, a := range run.Agents {
		counts[a.State]++
	}
	if run.State != "done" || counts["upgraded"] != active || counts["failed"] != 0 || counts["pending"] != len(plan.Pending) {
		t.Fatalf("run %s (%s): %v; want %d upgraded, none failed, %d pending", run.State, run.Reason, counts, active, len(plan.Pending))
	}
	// The waves one after the other, each started once the one before passed its gate.
	var ended time.Time
	for i, w := range run.Waves {
		if w.State != "passed" || w.Failed != 0 || w.Started.Before(ended) {
			t.Errorf("wave %d: %s, %d failed, started %s, the one before ended %s", i+1, w.State, w.Failed, w.Started, ended)
		}
		ended = w.Ended
	}

	// The requests, as the manager logged them.
	lines := readFrom(t, apiLog, logStart)
	var sends, reads, listing, other, refused int
	for _, line := range lines {
		m := apiLogLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("api.log line not in the API's format: %s", line)
		}
		method, path, params, status := m[1], m[2], m[3], m[4]
		var q map[string]string
		if err := json.Unmarshal([]byte(params), &q); err != nil {
			t.Fatalf("api.log parameters %s: %v", params, err)
		}
		if status == "429" {
			refused++
			continue
		}
		switch {
		case method == "PUT" && path == "/agents/upgrade":
			sends++
			if n := len(strings.Split(q["agents_list"], ",")); n > min(500, threads) {
				t.Errorf("an upgrade request of %d agents: at most %d", n, min(500, threads))
			}
		case method == "GET" && path == "/agents/upgrade_result", method == "GET" && path == "/agents" && q["agents_list"] != "":
			reads++
			if n := len(strings.Split(q["agents_list"], ",")); n > 500 {
				t.Errorf("a read of %d agents: at most 500", n)
			}
		case method == "GET" && path == "/agents":
			listing++
		default:
			other++
		}
	}
	// The bound: the plan's upgrade requests (and one more after each read of the evidence, when it
	// found a batch's threads partly free); per read of the evidence (one every poll at most: a poll's
	// pause comes before each) two bulk reads per 500 agents sent and not yet judged (at most three
	// batches of max_threads: one sending, two restarting, with sends and restarts of a second and a
	// poll of a second); the plan's listing in pages; a few more (login, the manager's version).
	judges := int(wall/poll) + len(run.Waves)
	perJudge := 1 + 2*((3*threads+499)/500)
	bound := plan.Requests + perJudge*judges + (seeded+1+1999)/2000 + 5
	total := sends + reads + listing + other
	t.Logf("scale: %d agents upgraded in %d waves in %s (%.0f agents/s); %d requests to the manager (%d upgrade, %d evidence reads, %d listing pages, %d other; %d refused 429; bound %d, %.3f per agent); siemctl peak RSS %.1f MiB, CPU %s = %.1f%% of the wall time",
		active, len(run.Waves), wall.Round(time.Millisecond), float64(active)/wall.Seconds(), total, sends, reads, listing, other, refused, bound,
		float64(total)/active, rssMiB, cpu.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds())
	if sends < plan.Requests || sends != run.Requests || reads != run.Reads {
		t.Errorf("api.log: %d upgrade requests and %d evidence reads; the plan said %d upgrade requests (at least), the run counted %d and %d",
			sends, reads, plan.Requests, run.Requests, run.Reads)
	}
	if total > bound || total > active/10 {
		t.Errorf("%d requests for %d agents: more than the bound %d (or a tenth of the agents): polling per agent?", total, active, bound)
	}
	if rssMiB > 256 {
		t.Errorf("siemctl's peak RSS %.1f MiB for %d agents: more than 256 MiB", rssMiB, seeded)
	}

	// The run's journal: its start, a line per upgrade request, each wave's gate, its end.
	jl := readFrom(t, l.StateDir()+"/agent-upgrades/"+run.ID+".jsonl", 0)
	types := map[string]int{}
	for _, line := range jl {
		var ev struct{ Type string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("journal line %s: %v", line, err)
		}
		types[ev.Type]++
	}
	if len(jl) < 2 || !strings.Contains(jl[0], `"type":"run-start"`) || !strings.Contains(jl[len(jl)-1], `"type":"run-end"`) ||
		types["send"] != sends || types["wave-pass"] != len(run.Waves) || types["agents-failed"] != 0 {
		t.Errorf("journal: %d lines, %v (want a send per upgrade request, %d, and a wave-pass per wave)", len(jl), types, sends)
	}

	// agents outdated agrees: the agents left older than 4.9.0 are exactly the pending ones, none active.
	r = l.Siemctl("agents", "outdated", "--than", "4.9.0", "-o", "json")
	var outdated struct {
		Count  int `json:"count"`
		Agents []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"agents"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &outdated) != nil {
		t.Fatalf("outdated: exit %d %.2000s %s", r.Code, r.Stdout, r.Stderr)
	}
	if outdated.Count != len(plan.Pending) {
		t.Errorf("agents outdated: %d older than 4.9.0, want the %d pending", outdated.Count, len(plan.Pending))
	}
	for _, a := range outdated.Agents {
		if a.Status == "active" || run.Agents[a.ID].State != "pending" {
			t.Errorf("agent %s outdated and %s, its run state %q", a.ID, a.Status, run.Agents[a.ID].State)
		}
	}
	// health agrees: every agent that was active is active again, none newer than the manager.
	r = l.Siemctl("health", "--check", "agents", "-o", "json")
	var rep struct {
		Checks []struct {
			ID      string             `json:"id"`
			Status  string             `json:"status"`
			Summary string             `json:"summary"`
			Metrics map[string]float64 `json:"metrics"`
		} `json:"checks"`
	}
	if json.Unmarshal([]byte(r.Stdout), &rep) != nil || len(rep.Checks) != 1 {
		t.Fatalf("health: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	c := rep.Checks[0]
	if r.Code != 0 || c.Status != "OK" || c.Metrics["active"] < active || int(c.Metrics["disconnected"]) != len(plan.Pending) {
		t.Errorf("health agents: exit %d, %s: %s (metrics %v; want OK, %d active at least, the %d pending disconnected)",
			r.Code, c.Status, c.Summary, c.Metrics, active, len(plan.Pending))
	}
}

func waveSizes(waves [][]string) []int {
	out := make([]int, len(waves))
	for i, w := range waves {
		out[i] = len(w)
	}
	return out
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// readFrom returns the lines of p from offset on.
func readFrom(t *testing.T, p string, offset int64) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b[offset:]), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
