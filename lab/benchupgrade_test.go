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

// TestBenchUpgradeFloorLines: the benchmark's comparison with the bare upgrade prints, per
// volume, siemctl's and the bare upgrade's mean over the cycles with their ratio, the growth of
// each from the smallest volume, the same two over the upgrades without the security plugin's
// first-load retry, and in which upgrades it retried.
func TestBenchUpgradeFloorLines(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	res := write("results.tsv", "volume\tmode\tdata_MiB\tindices\tupgrade_s\trollback_s\n"+
		"small\tsnapshot#1\t79\t51\t40.0\t30.0\nsmall\tsnapshot#2\t27\t51\t44.0\t31.0\n"+
		"large\tsnapshot#1\t1581\t51\t60.0\t40.0\nlarge\tsnapshot#2\t482\t51\t62.0\t41.0\n")
	bare := write("bare.tsv", "volume\tmode\tbare_s\tback_copy_s\tsec_retry\n"+
		"small\tsnapshot#1\t20.0\t0.4\t0\nsmall\tsnapshot#2\t22.0\t0.4\t0\n"+
		"large\tsnapshot#1\t30.0\t3.1\t1\nlarge\tsnapshot#2\t32.0\t3.0\t0\n")
	retry := write("retries.tsv", "run\tsec_retry\nbare small/snapshot#1\t0\nsiemctl small/snapshot#1\t0\n"+
		"bare small/snapshot#2\t0\nsiemctl small/snapshot#2\t1\nbare large/snapshot#1\t1\nsiemctl large/snapshot#1\t0\n"+
		"bare large/snapshot#2\t0\nsiemctl large/snapshot#2\t0\n")
	out, err := exec.Command("bash", "../scripts/bench-upgrade-floor.sh", res, bare, retry, "small", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("bench-upgrade-floor.sh: %v\n%s", err, out)
	}
	for _, want := range []string{
		"floor: small siemctl 42.0s bare 21.0s ratio 2.00×\n",
		"floor: large siemctl 61.0s bare 31.0s ratio 1.97×\n",
		"growth: large siemctl +19.0s bare +10.0s ratio 1.90×\n",
		// the upgrades without the plugin's retry: siemctl small #1, large #1 and #2; bare small #1 and #2, large #2
		"floor without retry: small siemctl 40.0s (1 of 2) bare 21.0s (2 of 2) ratio 1.90×\n",
		"floor without retry: large siemctl 61.0s (2 of 2) bare 32.0s (1 of 2) ratio 1.91×\n",
		"growth without retry: large siemctl +21.0s bare +11.0s ratio 1.91×\n",
		"security plugin first-load retry: 2 of 8 upgrades (siemctl small/snapshot#2, bare large/snapshot#1)\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "growth: small") {
		t.Errorf("the smallest volume has no growth line:\n%s", out)
	}
	// A volume where every siemctl upgrade retried: no figure made up for it.
	retry = write("retries.tsv", "run\tsec_retry\nsiemctl small/snapshot#1\t1\nsiemctl small/snapshot#2\t1\n")
	out, err = exec.Command("bash", "../scripts/bench-upgrade-floor.sh", res, bare, retry, "small", "1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "floor without retry: small siemctl n/a (0 of 2) bare 21.0s (2 of 2) ratio n/a (every upgrade retried)\n") ||
		!strings.Contains(string(out), "growth without retry: large n/a (a volume without an upgrade free of the retry)\n") {
		t.Errorf("every small upgrade retried: %v\n%s", err, out)
	}
	// Two modes: each line names the volume and the mode.
	out, err = exec.Command("bash", "../scripts/bench-upgrade-floor.sh", res, bare, retry, "small", "2").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "floor: small/snapshot siemctl 42.0s") {
		t.Errorf("two modes: %v\n%s", err, out)
	}
	// Neither grew: the ratio is not a number, the difference is.
	res = write("results.tsv", "volume\tmode\tdata_MiB\tindices\tupgrade_s\trollback_s\n"+
		"small\tsnapshot#1\t79\t51\t24.0\t30.0\nlarge\tsnapshot#1\t1581\t51\t22.5\t40.0\n")
	bare = write("bare.tsv", "volume\tmode\tbare_s\tback_copy_s\tsec_retry\nsmall\tsnapshot#1\t18.0\t0.4\t0\nlarge\tsnapshot#1\t17.0\t3.1\t0\n")
	out, err = exec.Command("bash", "../scripts/bench-upgrade-floor.sh", res, bare, retry, "small", "1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "growth: large siemctl -1.5s bare -1.0s ratio n/a (the bare upgrade did not grow; siemctl -0.5s beyond it)\n") {
		t.Errorf("neither grew: %v\n%s", err, out)
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

// TestBenchUpgradeClusterLines: the cluster volume's lines: per host its plain restart (floor)
// against its turn in the roll, the roll against the sum of the floors with siemctl's own share,
// the flow's events lost and duplicated, the share of searches answered with every shard; without
// the probe's rows, that the share was not measured.
func TestBenchUpgradeClusterLines(t *testing.T) {
	tsv := filepath.Join(t.TempDir(), "cluster.tsv")
	body := "what\tname\tvalue\n" +
		"floor\tindexer-1\t20.0\nfloor\tindexer-2\t22.0\nfloor\tmanager-1\t5.0\nfloor\tdashboard-1\t3.0\n" +
		"roll\t-\t150.0\nprobe_tries\t-\t170\nprobe_all\t-\t166\nprobe_gap\t-\t3.5\n" +
		"events\t-\t800\nlost\t-\t0\ndup\t-\t2\n" +
		"turn\tindexer-2\t44.0\nturn\tindexer-1\t30.0\nturn\tmanager-1\t10.0\nown\t-\t12.5\n"
	if err := os.WriteFile(tsv, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "../scripts/bench-upgrade-cluster-lines.sh", tsv).CombinedOutput()
	if err != nil {
		t.Fatalf("bench-upgrade-cluster-lines.sh: %v\n%s", err, out)
	}
	want := "cluster: indexer-1 floor 20.0s turn 30.0s ratio 1.50×\n" +
		"cluster: indexer-2 floor 22.0s turn 44.0s ratio 2.00×\n" +
		"cluster: manager-1 floor 5.0s turn 10.0s ratio 2.00×\n" +
		"cluster: dashboard-1 floor 3.0s turn n/a (no turn in the record)\n" +
		"cluster: roll 150.0s floors 50.0s ratio 3.00× siemctl own 12.5s (8.3% of the roll)\n" +
		"cluster: events 800 lost 0 dup 2\n" +
		"cluster: searches answered with every shard 97.65% (166 of 170, longest gap 3.5s)\n"
	if string(out) != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	// No probe rows: said, not a 100% share.
	if err := os.WriteFile(tsv, []byte("what\tname\tvalue\nfloor\tindexer-1\t20.0\nroll\t-\t40.0\nturn\tindexer-1\t40.0\nown\t-\t1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command("bash", "../scripts/bench-upgrade-cluster-lines.sh", tsv).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "cluster: searches answered not measured") || strings.Contains(string(out), "every shard") {
		t.Errorf("without the probe: %v\n%s", err, out)
	}
}
