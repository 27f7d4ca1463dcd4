package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchUpgrade runs scripts/bench-upgrade.sh with a siemctl and a siemlab that only record: the
// fake siemlab's `up` says whether the indexer's user (uid 65534, as the lab runs OpenSearch) can
// reach the lab directory's parent, then stops the script (exit 3). It returns the script's
// output and what the fake siemlab recorded ("" when up was never called).
func benchUpgrade(t *testing.T, env ...string) (out, up string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bench-upgrade.sh runs as root (the lab needs it)")
	}
	for _, tool := range []string{"jq", "setpriv", "find", "mktemp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/install-deps.sh)", tool)
		}
	}
	bin := t.TempDir()
	rec := filepath.Join(t.TempDir(), "up.rec")
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("siemctl", "exit 0")
	write("siemlab", `[ "$1" = up ] || exit 0
while [ $# -gt 0 ]; do [ "$1" = --dir ] && dir=$2; shift; done
parent=$(dirname "$dir")
if setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cd "$1"' sh "$parent" 2>/dev/null; then
	echo "reachable $dir" > '`+rec+`'
else
	echo "unreachable $dir" > '`+rec+`'
fi
exit 3`)
	cmd := exec.Command("bash", "../scripts/bench-upgrade.sh")
	cmd.Env = append(os.Environ(), append([]string{"BENCH_BIN=" + bin}, env...)...)
	b, _ := cmd.CombinedOutput()
	r, _ := os.ReadFile(rec)
	return string(b), strings.TrimSpace(string(r))
}

// TestBenchUpgradeWorkDirIsReachable: `make bench-upgrade` from a fresh clone makes its own work
// directory (mktemp -d, mode 0700): the lab inside it must be reachable by the indexer's user, or
// `siemlab up` refuses it at once.
func TestBenchUpgradeWorkDirIsReachable(t *testing.T) {
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := OpenParents(tmp); err != nil {
		t.Skipf("the temp dir's parents cannot be opened: %v", err)
	}
	out, up := benchUpgrade(t, "TMPDIR="+tmp, "BENCH_DIR=")
	if !strings.HasPrefix(up, "reachable "+tmp+"/siemctl-bench-") {
		t.Fatalf("siemlab up got a lab dir the indexer's user cannot reach: %q\n%s", up, out)
	}
}

// TestBenchUpgradeRefusesAClosedBenchDir: a BENCH_DIR under a 0700 directory is refused before
// the lab is started, naming the directory and the fix.
func TestBenchUpgradeRefusesAClosedBenchDir(t *testing.T) {
	closed := filepath.Join(t.TempDir(), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	out, up := benchUpgrade(t, "BENCH_DIR="+filepath.Join(closed, "work"))
	if up != "" || !strings.Contains(out, closed+" is not traversable by others") || !strings.Contains(out, "chmod o+x "+closed) {
		t.Fatalf("a closed BENCH_DIR: siemlab up %q\n%s", up, out)
	}
}

// TestBenchUpgradeClusterLabIsReachable: the cluster volume alone brings up no single lab; its
// distributed lab goes into the same work directory, reachable by the indexer's user.
func TestBenchUpgradeClusterLabIsReachable(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed (scripts/install-deps.sh)")
	}
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := OpenParents(tmp); err != nil {
		t.Skipf("the temp dir's parents cannot be opened: %v", err)
	}
	out, up := benchUpgrade(t, "TMPDIR="+tmp, "BENCH_DIR=", "BENCH_VOLUMES=cluster")
	if !strings.HasPrefix(up, "reachable "+tmp+"/siemctl-bench-") || !strings.HasSuffix(up, "/cluster") {
		t.Fatalf("siemlab up (cluster volume) got %q, want the work directory's cluster lab, reachable\n%s", up, out)
	}
}
