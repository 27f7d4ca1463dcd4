package register_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/siemctl/siemctl/ansible"
	"github.com/siemctl/siemctl/internal/testenv"
)

// siemctlCall matches a playbook's siemctl invocation: the arguments between the binary and the
// optional extra arguments.
var siemctlCall = regexp.MustCompile(`\{\{ siemctl(?:_bin \| quote)? \}\}((?:\s+[^{\s]+|\s+\{\{ [a-z_]+ \| quote \}\})*)`)

// commandsOf walks a playbook's YAML and returns every siemctl call its tasks run.
func commandsOf(t *testing.T, name string) [][]string {
	t.Helper()
	data, err := ansible.Files.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var calls [][]string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			for _, m := range siemctlCall.FindAllStringSubmatch(x, -1) {
				var args []string
				for _, f := range strings.Fields(m[1]) {
					if strings.HasPrefix(f, "{{") || f == "|" || f == "quote" || f == "}}" {
						continue // a variable's value (the target version)
					}
					args = append(args, f)
				}
				if len(args) > 0 { // not the definition of the siemctl variable itself
					calls = append(calls, args)
				}
			}
		}
	}
	walk(doc)
	return calls
}

// TestPlaybooksCallRealCommands: every siemctl command and flag a shipped playbook runs exists in
// this siemctl, so a playbook never fails on a host with "unknown command" mid-roll.
func TestPlaybooksCallRealCommands(t *testing.T) {
	root := tree()
	if len(ansible.Playbooks()) == 0 {
		t.Fatal("no playbooks embedded")
	}
	for _, pb := range ansible.All() {
		calls := commandsOf(t, pb)
		if len(calls) == 0 {
			t.Errorf("%s runs no siemctl command", pb)
		}
		for _, args := range calls {
			var path, flags []string
			for _, a := range args {
				if strings.HasPrefix(a, "-") {
					flags = append(flags, a)
				} else if len(flags) == 0 {
					path = append(path, a)
				}
			}
			cmd, rest, err := root.Find(path)
			if err != nil || len(rest) > 0 || cmd == root {
				t.Errorf("%s: siemctl %s: no such command (%v)", pb, strings.Join(path, " "), err)
				continue
			}
			for _, f := range flags {
				name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
				known := cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil
				if !strings.HasPrefix(f, "--") {
					known = cmd.Flags().ShorthandLookup(name) != nil || cmd.InheritedFlags().ShorthandLookup(name) != nil
				}
				if !known {
					t.Errorf("%s: siemctl %s has no flag %s", pb, strings.Join(path, " "), f)
				}
			}
		}
	}
}

// ansiblePlaybook returns ansible-playbook's path; it skips the test where Ansible is absent (and
// fails under SIEMCTL_IT_REQUIRED=1).
func ansiblePlaybook(t *testing.T) string {
	t.Helper()
	return testenv.Tool(t, "scripts/install-deps.sh installs it (ansible-core)", "ansible-playbook")
}

// playbookRun runs a shipped playbook with real ansible-playbook against six local hosts (i1-i3
// indexer, m1-m2 manager, d1 dashboard) whose siemctl is testdata/fake-siemctl.py, a stand-in
// that keeps the coordination record in a file; it returns the fake's call log and the play's
// output.
func playbookRun(t *testing.T, pb string, env ...string) (calls []string, out string, err error) {
	t.Helper()
	return playbookRunIn(t, t.TempDir(), pb, env...)
}

// playbookRunIn is playbookRun in dir: a second run there finds the first one's record, and its
// call log holds only its own calls.
func playbookRunIn(t *testing.T, dir, pb string, env ...string) (calls []string, out string, err error) {
	t.Helper()
	bin := ansiblePlaybook(t)
	fake, _ := filepath.Abs("testdata/fake-siemctl.py")
	var inv strings.Builder
	for _, g := range []struct{ group, hosts string }{{"indexer", "i1 i2 i3"}, {"manager", "m1 m2"}, {"dashboard", "d1"}} {
		fmt.Fprintf(&inv, "[%s]\n", g.group)
		for _, h := range strings.Fields(g.hosts) {
			envFile := filepath.Join(dir, h+".env")
			if err := os.WriteFile(envFile, []byte("export FAKE_HOST="+h+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&inv, "%s ansible_connection=local ansible_python_interpreter=%s siemlab_env=%s\n", h, pythonOf(t), envFile)
		}
	}
	invPath := filepath.Join(dir, "inventory.ini")
	pbPath := filepath.Join(dir, pb)
	if err := os.WriteFile(invPath, []byte(inv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range ansible.All() { // side by side, as installed: upgrade.yml imports rollback.yml, includes tasks/
		data, _ := ansible.Files.ReadFile(name)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(dir, "calls.log")
	_ = os.Remove(logPath)
	cmd := exec.Command(bin, "-i", invPath, pbPath, "-e", "siemctl_target=4.10.0", "-e", "siemctl_bin="+fake,
		"-e", "siemctl_turn_delay=1", "-e", "siemctl_turn_tries=3")
	cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCAL_TEMP="+dir, "ANSIBLE_HOME="+dir, "ANSIBLE_RETRY_FILES_ENABLED=0",
		"FAKE_STATE="+filepath.Join(dir, "record.json"), "FAKE_LOG="+logPath)
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	logged, _ := os.ReadFile(logPath)
	return strings.Split(strings.TrimSpace(string(logged)), "\n"), string(b), err
}

// pythonOf is the Python the test's ansible-playbook runs its modules with on the local hosts.
func pythonOf(t *testing.T) string {
	t.Helper()
	return testenv.Tool(t, "Ansible's modules need it (apt-get install python3)", "/usr/bin/python3", "python3")
}

// TestUpgradePlaybookRollsInTheRecordsOrder: upgrade.yml prepares once, then brings one node its
// turn at a time in the order the coordination record gives, following a recomputed order when the
// elected cluster manager moves mid-roll and retrying a turn whose lease is still held (exit 7), and
// finishes once.
func TestUpgradePlaybookRollsInTheRecordsOrder(t *testing.T) {
	calls, out, err := playbookRun(t, "upgrade.yml", "FAKE_REORDER=1", "FAKE_BUSY=m1")
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	want := []string{
		"apply i1 4.10.0",
		"node i2 indexer/i2", "node i1 indexer/i1", "node i3 indexer/i3", // i3 elected after i2: last
		"busy m1 manager/m1", "node m1 manager/m1", "node m2 manager/m2", "node d1 dashboard/d1",
		"finish i1 4.10.0",
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("siemctl calls:\n%s\nwant:\n%s\n\nplay:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"), out)
	}
}

// TestUpgradePlaybookChecksEveryHostsPackagesFirst: before the apply, every host judges its own
// packages for the target (upgrade plan --cluster there, its preflight/versions gate); a host whose
// repositories do not offer it stops the play, named with the gate's reason, and nothing is
// applied. With every host offering it, each host was judged before the apply.
func TestUpgradePlaybookChecksEveryHostsPackagesFirst(t *testing.T) {
	dir := t.TempDir()
	calls, out, err := playbookRunIn(t, dir, "upgrade.yml", "FAKE_NO_TARGET=m2")
	if err == nil {
		t.Fatalf("ansible-playbook succeeded although m2 cannot install the target:\n%s", out)
	}
	if !strings.Contains(out, "m2 cannot go to 4.10.0: wazuh-manager 4.10.0-1 is not installable (available: 4.9.0-1)") || slices.ContainsFunc(calls, func(c string) bool { return c != "" }) {
		t.Errorf("calls %q, want none (no apply); the play must name m2 and its reason:\n%s", calls, out)
	}
	for _, h := range []string{"i1", "i2", "i3", "m1", "m2", "d1"} {
		if _, err := os.Stat(filepath.Join(dir, h+".planned")); err != nil {
			t.Errorf("%s's packages were not judged: %v", h, err)
		}
	}

	dir = t.TempDir()
	calls, out, err = playbookRunIn(t, dir, "upgrade.yml")
	if err != nil || len(calls) == 0 || calls[0] != "apply i1 4.10.0" {
		t.Fatalf("every host offering the target: %v, calls %q\n%s", err, calls, out)
	}
	for _, h := range []string{"i1", "i2", "i3", "m1", "m2", "d1"} {
		if _, err := os.Stat(filepath.Join(dir, h+".planned")); err != nil {
			t.Errorf("%s's packages were not judged before the apply: %v", h, err)
		}
	}
}

// TestUpgradePlaybookFollowsAnElectionAtTheTake: the election moves to i3's node when i3 takes
// its turn; the take re-orders and exits 7 naming i1. The play reads the record again before the
// next try and brings i1 its turn, then i3: no operator action, no retry of the stale host (issue
// 34 item 4).
func TestUpgradePlaybookFollowsAnElectionAtTheTake(t *testing.T) {
	calls, out, err := playbookRun(t, "upgrade.yml", "FAKE_TAKE_REORDER=i3")
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	want := []string{
		"apply i1 4.10.0",
		"node i2 indexer/i2", "moved i3 indexer/i3", "node i1 indexer/i1", "node i3 indexer/i3",
		"node m1 manager/m1", "node m2 manager/m2", "node d1 dashboard/d1",
		"finish i1 4.10.0",
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("siemctl calls:\n%s\nwant:\n%s\n\nplay:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"), out)
	}
}

// TestUpgradePlaybookGivesUpOnATurnThatDoesNotCome: a turn still not free after
// siemctl_turn_tries tries in a row fails the play naming the entry, its host and siemctl's reason;
// finish does not run.
func TestUpgradePlaybookGivesUpOnATurnThatDoesNotCome(t *testing.T) {
	calls, out, err := playbookRun(t, "upgrade.yml", "FAKE_BUSY_ALWAYS=m1")
	if err == nil {
		t.Fatalf("ansible-playbook succeeded with a turn that never came:\n%s", out)
	}
	if !strings.Contains(out, "manager/m1 (m1) was not free after 3 tries") || slices.Contains(calls, "finish i1 4.10.0") {
		t.Errorf("calls %q\nplay:\n%s", calls, out)
	}
}

// TestUpgradePlaybookStopsAtAFailedNode: a node whose upgrade fails (siemctl rolled it back, exit
// 10) stops the whole roll there: no later node is touched and finish does not run.
// Run again, the playbook resumes the roll from the record: no second apply, the failed node and
// the ones after it, then finish.
func TestUpgradePlaybookStopsAtAFailedNode(t *testing.T) {
	dir := t.TempDir()
	calls, out, err := playbookRunIn(t, dir, "upgrade.yml", "FAKE_FAIL=m1")
	if err == nil {
		t.Fatalf("ansible-playbook succeeded with a failed node:\n%s", out)
	}
	want := []string{"apply i1 4.10.0", "node i2 indexer/i2", "node i3 indexer/i3", "node i1 indexer/i1", "fail m1 manager/m1"}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("siemctl calls:\n%s\nwant:\n%s\n\nplay:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"), out)
	}

	calls, out, err = playbookRunIn(t, dir, "upgrade.yml")
	if err != nil {
		t.Fatalf("ansible-playbook run again: %v\n%s", err, out)
	}
	want = []string{"node m1 manager/m1", "node m2 manager/m2", "node d1 dashboard/d1", "finish i1 4.10.0"}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("run again, siemctl calls:\n%s\nwant:\n%s\n\nplay:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"), out)
	}
}

// TestPlaybooksSyntax runs ansible-playbook --syntax-check on every shipped playbook.
func TestPlaybooksSyntax(t *testing.T) {
	bin := ansiblePlaybook(t)
	dir := t.TempDir()
	inv := filepath.Join(dir, "inventory.ini")
	if err := os.WriteFile(inv, []byte("[indexer]\ni1 ansible_connection=local\n[manager]\nm1 ansible_connection=local\n[dashboard]\nd1 ansible_connection=local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pb := range ansible.Playbooks() {
		data, _ := ansible.Files.ReadFile(pb)
		p := filepath.Join(dir, pb)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--syntax-check", "-i", inv, p)
		cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCAL_TEMP="+dir, "ANSIBLE_HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("ansible-playbook --syntax-check %s: %v\n%s", pb, err, out)
		}
	}
}
