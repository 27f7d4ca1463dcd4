//go:build e2e

package upgrade_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/e2e"
)

// rollPortOffset: the rolling upgrade's distributed lab (distributed ports are the single lab's +
// 20000, so only another distributed lab at the same offset could collide: lab/cmd/siemlab's use
// 0 and 500).
const rollPortOffset = 0

// TestE2ERollingUpgrade: a fresh distributed lab (three indexer nodes, a manager master and worker
// with their Filebeat, a dashboard) rolled from 4.9.0 to 4.10.0 host by host, each through its own
// env (its siemctl.yaml, dpkg root and apt repository), while `siemlab flow send` writes events
// throughout: `upgrade apply --cluster` on indexer-1, `upgrade node` on the indexer nodes with the
// elected cluster manager last, then the master, the worker and the dashboard, `upgrade finish
// --cluster`. Every package ends at the target, health is OK on every host, and every event the
// managers wrote is searchable exactly once.
func TestE2ERollingUpgrade(t *testing.T) {
	l := e2e.Up(t, e2e.Options{Topology: lab.TopologyDistributed, PortOffset: rollPortOffset})
	const to, pkgVersion = "4.10.0", "4.10.0-1"
	on := func(host string) *e2e.Lab { return l.OnHost(t, host) }
	must := func(t *testing.T, host string, args ...string) e2e.Result {
		t.Helper()
		r := on(host).Siemctl(args...)
		if r.Code != 0 {
			t.Fatalf("%s: siemctl %s: exit %d\n%s\n%s", host, strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
		}
		return r
	}

	// The flow runs throughout the roll.
	_, siemlab := e2e.Binaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	send := exec.CommandContext(ctx, siemlab, "flow", "send", "--dir", l.Dir, "--tag", "roll", "--rate", "5")
	send.Cancel = func() error { return send.Process.Signal(syscall.SIGTERM) }
	var sendOut strings.Builder
	send.Stdout, send.Stderr = &sendOut, &sendOut
	if err := send.Start(); err != nil {
		t.Fatal(err)
	}
	stopSend := func() {
		if send.Process != nil && send.ProcessState == nil {
			send.Process.Signal(syscall.SIGTERM)
			send.Wait()
		}
	}
	defer stopSend()

	// The snapshot repository lives in the directory every node shares (path.repo).
	must(t, "indexer-1", "indexer", "repository", "prepare", "--yes")

	start := time.Now()
	took := map[string]time.Duration{}
	t.Run("apply --cluster on indexer-1", func(t *testing.T) {
		dry := must(t, "indexer-1", "upgrade", "apply", "--cluster", "--to", to, "--dry-run")
		for _, want := range []string{"preflight/snapshot-repository", "_verify", "indexer/allocation-primaries", "indexer/flush"} {
			if !strings.Contains(dry.Stdout+dry.Stderr, want) {
				t.Errorf("dry run lacks %q:\n%s%s", want, dry.Stdout, dry.Stderr)
			}
		}
		r := must(t, "indexer-1", "upgrade", "apply", "--cluster", "--to", to, "--yes")
		took["apply"] = r.Took
		t.Logf("apply --cluster: %s\n%s", r.Took, r.Stderr)
	})
	if t.Failed() {
		t.FailNow()
	}

	order := rollOrder(t, on("indexer-1"))
	t.Logf("order: %s", strings.Join(order, ", "))
	t.Run("out of turn: exit 7 naming whose turn it is", func(t *testing.T) {
		r := on("manager-1").Siemctl("upgrade", "node", "--to", to, "--yes")
		if r.Code != 7 || !strings.Contains(r.Stdout+r.Stderr, order[0]) {
			t.Errorf("upgrade node on manager-1 first: exit %d, want 7 naming %s\n%s%s", r.Code, order[0], r.Stdout, r.Stderr)
		}
	})
	// Each host in its turn. The record is the judge of whose turn it is: when the elected cluster
	// manager changes mid-roll the order is recomputed (it goes last), so a host told "not your
	// turn" (exit 7) waits and the next one in the order is asked.
	var rolled []string
	killed := false
	remaining := slices.Clone(order)
	for len(remaining) > 0 {
		progressed := false
		for i, h := range remaining {
			var code int
			ok := t.Run("node "+h, func(t *testing.T) {
				dry := must(t, h, "upgrade", "node", "--to", to, "--dry-run")
				if !strings.Contains(dry.Stdout, "turn: ") {
					t.Errorf("%s dry run does not show the turn's calls:\n%s", h, dry.Stdout)
				}
				comp := strings.SplitN(h, "-", 2)[0]
				for _, other := range []string{"indexer/stop", "manager/stop", "dashboard/stop"} {
					if strings.HasPrefix(other, comp+"/") != strings.Contains(dry.Stdout+dry.Stderr, "] "+other+" ") {
						t.Errorf("%s dry run and %s:\n%s%s", h, other, dry.Stdout, dry.Stderr)
					}
				}
				if h == "manager-2" && !killed {
					// kill -9 of siemctl on the worker mid-turn (its manager stopped, its databases
					// being copied): the same command takes the turn back and resumes the journal.
					killed = true
					killMidStep(t, on(h), "manager/backup-db", "upgrade", "node", "--to", to, "--yes", "--lease", "10m")
					r := on(h).Siemctl("upgrade", "node", "--to", to, "--yes", "--lease", "10m")
					if r.Code != 0 || !strings.Contains(r.Stderr, "resumed the turn") || !strings.Contains(r.Stderr, "resuming this host's node run") {
						t.Fatalf("%s after kill -9: exit %d, want 0 with the turn and the run resumed\n%s\n%s", h, r.Code, r.Stdout, r.Stderr)
					}
					code = 0
					took[h] = r.Took
					t.Logf("%s (resumed after kill -9): %s\n%s", h, r.Took, r.Stderr)
					return
				}
				// The lease outlasts the node's own restart: the turn's record is read and renewed
				// through this host's indexer URL, its own node, which does not answer while it restarts.
				r := on(h).Siemctl("upgrade", "node", "--to", to, "--yes", "--lease", "10m")
				code = r.Code
				if r.Code == 7 {
					t.Logf("%s: not its turn yet (exit 7): %s", h, strings.TrimSpace(r.Stderr))
					return
				}
				if r.Code != 0 {
					t.Fatalf("%s: upgrade node: exit %d\n%s\n%s", h, r.Code, r.Stdout, r.Stderr)
				}
				took[h] = r.Took
				t.Logf("%s: %s\n%s", h, r.Took, r.Stderr)
			})
			if !ok {
				t.FailNow()
			}
			if code == 0 {
				rolled = append(rolled, h)
				remaining = slices.Delete(remaining, i, i+1)
				progressed = true
				break
			}
		}
		if !progressed {
			t.Fatalf("no host of %v could take its turn", remaining)
		}
	}
	t.Logf("rolled in the order %s", strings.Join(rolled, ", "))
	order = rolled
	t.Run("finish --cluster on indexer-1", func(t *testing.T) {
		r := must(t, "indexer-1", "upgrade", "finish", "--cluster", "--to", to, "--yes")
		took["finish"] = r.Took
		t.Logf("finish --cluster: %s\n%s", r.Took, r.Stderr)
	})
	wall := time.Since(start)
	var parts []string
	for _, k := range append([]string{"apply"}, append(order, "finish")...) {
		parts = append(parts, fmt.Sprintf("%s %s", k, took[k].Round(100*time.Millisecond)))
	}
	t.Logf("roll wall time %s: %s", wall.Round(100*time.Millisecond), strings.Join(parts, ", "))

	t.Run("every host at the target, health OK everywhere", func(t *testing.T) {
		for _, h := range lab.DistHosts {
			for p, v := range hostPackages(t, filepath.Join(l.Dir, "hosts", h.Name)) {
				if v != pkgVersion {
					t.Errorf("%s: package %s is %s, want %s", h.Name, p, v, pkgVersion)
				}
			}
			healthOK(t, on(h.Name))
		}
		r := must(t, "manager-2", "health", "--cluster")
		for _, want := range []string{"indexer cluster: OK   3 node(s), all on 2.19.3", "manager cluster: OK   2 node(s) connected, all on"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("health --cluster lacks %q:\n%s", want, r.Stdout)
			}
		}
	})

	t.Run("no event lost", func(t *testing.T) {
		stopSend()
		r := l.Siemlab("flow", "check", "--tag", "roll", "--wait", "3m", "--json")
		var rep lab.FlowReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Lost != 0 || rep.Duplicates != 0 || rep.Written == 0 {
			t.Fatalf("flow check: exit %d (%v)\n%s%s\nflow send: %s", r.Code, err, r.Stdout, r.Stderr, sendOut.String())
		}
		t.Logf("flow: %s", rep)
	})
}

// killMidStep runs siemctl args on the host and sends it SIGKILL as soon as its progress says step
// started; the run must have been killed (not finished).
func killMidStep(t *testing.T, hl *e2e.Lab, step string, args ...string) {
	t.Helper()
	bin, _ := e2e.Binaries(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), hl.Env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if strings.Contains(line, "] "+step+" …") {
			cmd.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	go func() { // drain
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("siemctl %s was not killed at %s (%v):\n%s", strings.Join(args, " "), step, err, strings.Join(seen, "\n"))
	}
}

// rollOrder is the order of the hosts: the indexer nodes with the elected cluster manager last,
// the manager master, the worker, the dashboard.
func rollOrder(t *testing.T, l *e2e.Lab) []string {
	t.Helper()
	r := l.Siemctl("health", "--cluster")
	elected := ""
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "(elected cluster manager)") {
			elected, _, _ = strings.Cut(line, ":")
		}
	}
	if elected == "" {
		t.Fatalf("no elected cluster manager in health --cluster:\n%s%s", r.Stdout, r.Stderr)
	}
	var order []string
	for _, h := range []string{"indexer-1", "indexer-2", "indexer-3"} {
		if h != elected {
			order = append(order, h)
		}
	}
	order = append(order, elected, "manager-1", "manager-2", "dashboard-1")
	if len(slices.Compact(slices.Sorted(slices.Values(order)))) != 6 {
		t.Fatalf("order %v", order)
	}
	return order
}

// hostPackages are the versions of the stack's packages installed on one host of the lab (each
// runs some of them).
func hostPackages(t *testing.T, dir string) map[string]string {
	t.Helper()
	hl, err := lab.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("dpkg-query", "--admindir="+filepath.Join(dir, "root", "var/lib/dpkg"), "-W", "-f=${Package} ${Version} ${db:Status-Status}\n").Output()
	if err != nil {
		t.Fatalf("dpkg-query: %v", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "installed" && slices.Contains(hl.Profile().Packages(), f[0]) {
			m[f[0]] = f[1]
		}
	}
	if len(m) == 0 {
		t.Fatalf("%s: none of %v installed", dir, hl.Profile().Packages())
	}
	return m
}
