package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write puts body in dir/name and returns its path.
func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFloorLines: the benchmark's comparison with the bare upgrade prints, per volume, siemctl's
// and the bare upgrade's mean over the cycles with their ratio, the growth of each from the
// smallest volume, the same two over the upgrades without the security plugin's first-load retry,
// and in which upgrades it retried.
func TestFloorLines(t *testing.T) {
	dir := t.TempDir()
	in := FloorInput{
		Results: write(t, dir, "results.tsv", "volume\tmode\tdata_MiB\tindices\tupgrade_s\trollback_s\n"+
			"small\tsnapshot#1\t79\t51\t40.0\t30.0\nsmall\tsnapshot#2\t27\t51\t44.0\t31.0\n"+
			"large\tsnapshot#1\t1581\t51\t60.0\t40.0\nlarge\tsnapshot#2\t482\t51\t62.0\t41.0\n"),
		Bare: write(t, dir, "bare.tsv", "volume\tmode\tbare_s\tback_copy_s\tsec_retry\n"+
			"small\tsnapshot#1\t20.0\t0.4\t0\nsmall\tsnapshot#2\t22.0\t0.4\t0\n"+
			"large\tsnapshot#1\t30.0\t3.1\t1\nlarge\tsnapshot#2\t32.0\t3.0\t0\n"),
		Retries: write(t, dir, "retries.tsv", "run\tsec_retry\nbare small/snapshot#1\t0\nsiemctl small/snapshot#1\t0\n"+
			"bare small/snapshot#2\t0\nsiemctl small/snapshot#2\t1\nbare large/snapshot#1\t1\nsiemctl large/snapshot#1\t0\n"+
			"bare large/snapshot#2\t0\nsiemctl large/snapshot#2\t0\n"),
		First: "small", Modes: 1,
	}
	out, err := Floor(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "the bare upgrade (the spec's steps by hand, same data safety) against siemctl's, mean over the cycles:\n" +
		"floor: small siemctl 42.0s bare 21.0s ratio 2.00×\n" +
		"floor: large siemctl 61.0s bare 31.0s ratio 1.97×\n" +
		"growth: large siemctl +19.0s bare +10.0s ratio 1.90×\n" +
		"\n" +
		"the same over the upgrades where the security plugin's first load was not retried:\n" +
		// the upgrades without the plugin's retry: siemctl small #1, large #1 and #2; bare small #1 and #2, large #2
		"floor without retry: small siemctl 40.0s (1 of 2) bare 21.0s (2 of 2) ratio 1.90×\n" +
		"floor without retry: large siemctl 61.0s (2 of 2) bare 32.0s (1 of 2) ratio 1.91×\n" +
		"growth without retry: large siemctl +21.0s bare +11.0s ratio 1.91×\n" +
		"\n" +
		"security plugin first-load retry: 2 of 8 upgrades (siemctl small/snapshot#2, bare large/snapshot#1)\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}

	// A volume where every siemctl upgrade retried: no figure made up for it.
	in.Retries = write(t, dir, "retries.tsv", "run\tsec_retry\nsiemctl small/snapshot#1\t1\nsiemctl small/snapshot#2\t1\n")
	out, err = Floor(in)
	if err != nil || !strings.Contains(out, "floor without retry: small siemctl n/a (0 of 2) bare 21.0s (2 of 2) ratio n/a (every upgrade retried)\n") ||
		!strings.Contains(out, "growth without retry: large n/a (a volume without an upgrade free of the retry)\n") ||
		!strings.HasSuffix(out, "security plugin first-load retry: 2 of 2 upgrades (siemctl small/snapshot#1, siemctl small/snapshot#2)\n") {
		t.Errorf("every small upgrade retried: %v\n%s", err, out)
	}

	// Two modes: each line names the volume and the mode.
	in.Modes = 2
	out, err = Floor(in)
	if err != nil || !strings.Contains(out, "floor: small/snapshot siemctl 42.0s") || !strings.Contains(out, "growth: large/snapshot siemctl +19.0s") {
		t.Errorf("two modes: %v\n%s", err, out)
	}

	// Neither grew: the ratio is not a number, the difference is.
	in.Modes = 1
	in.Results = write(t, dir, "results.tsv", "volume\tmode\tdata_MiB\tindices\tupgrade_s\trollback_s\n"+
		"small\tsnapshot#1\t79\t51\t24.0\t30.0\nlarge\tsnapshot#1\t1581\t51\t22.5\t40.0\n")
	in.Bare = write(t, dir, "bare.tsv", "volume\tmode\tbare_s\tback_copy_s\tsec_retry\nsmall\tsnapshot#1\t18.0\t0.4\t0\nlarge\tsnapshot#1\t17.0\t3.1\t0\n")
	out, err = Floor(in)
	if err != nil || !strings.Contains(out, "growth: large siemctl -1.5s bare -1.0s ratio n/a (the bare upgrade did not grow; siemctl -0.5s beyond it)\n") {
		t.Errorf("neither grew: %v\n%s", err, out)
	}

	// No bare upgrade measured for a volume: its floor has no ratio.
	in.Bare = write(t, dir, "bare.tsv", "volume\tmode\tbare_s\tback_copy_s\tsec_retry\nsmall\tsnapshot#1\t18.0\t0.4\t0\n")
	out, err = Floor(in)
	if err != nil || !strings.Contains(out, "floor: large siemctl 22.5s bare 0.0s ratio n/a\n") {
		t.Errorf("no bare upgrade for large: %v\n%s", err, out)
	}
}

// TestFloorBadTables: a table that cannot be read, or a cell that is not a number, is an error
// naming the file and the cell, not a line with a made-up figure.
func TestFloorBadTables(t *testing.T) {
	dir := t.TempDir()
	ok := write(t, dir, "ok.tsv", "run\tsec_retry\n")
	bad := write(t, dir, "results.tsv", "volume\tmode\tdata_MiB\tindices\tupgrade_s\nsmall\tsnapshot#1\t79\t51\tFAILED\n")
	if _, err := Floor(FloorInput{Results: bad, Bare: ok, Retries: ok, First: "small", Modes: 1}); err == nil ||
		!strings.Contains(err.Error(), "results.tsv") || !strings.Contains(err.Error(), `column 5 is not a number ("FAILED")`) {
		t.Errorf("a failed cycle's cell: %v", err)
	}
	if _, err := Floor(FloorInput{Results: filepath.Join(dir, "missing.tsv"), Bare: ok, Retries: ok}); err == nil || !strings.Contains(err.Error(), "missing.tsv") {
		t.Errorf("a missing table: %v", err)
	}
}

// TestClusterLines: the cluster volume's lines: per host its plain restart (floor) against its
// turn in the roll, the roll against the sum of the floors with siemctl's own share, the flow's
// events lost and duplicated, the share of searches answered with every shard; without the
// probe's rows, that the share was not measured.
func TestClusterLines(t *testing.T) {
	dir := t.TempDir()
	tsv := write(t, dir, "cluster.tsv", "what\tname\tvalue\n"+
		"floor\tindexer-1\t20.0\nfloor\tindexer-2\t22.0\nfloor\tmanager-1\t5.0\nfloor\tdashboard-1\t3.0\n"+
		"roll\t-\t150.0\nprobe_tries\t-\t170\nprobe_all\t-\t166\nprobe_gap\t-\t3.5\n"+
		"events\t-\t800\nlost\t-\t0\ndup\t-\t2\n"+
		"turn\tindexer-2\t44.0\nturn\tindexer-1\t30.0\nturn\tmanager-1\t10.0\nown\t-\t12.5\n")
	out, err := Cluster(tsv)
	if err != nil {
		t.Fatal(err)
	}
	want := "cluster: indexer-1 floor 20.0s turn 30.0s ratio 1.50×\n" +
		"cluster: indexer-2 floor 22.0s turn 44.0s ratio 2.00×\n" +
		"cluster: manager-1 floor 5.0s turn 10.0s ratio 2.00×\n" +
		"cluster: dashboard-1 floor 3.0s turn n/a (no turn in the record)\n" +
		"cluster: roll 150.0s floors 50.0s ratio 3.00× siemctl own 12.5s (8.3% of the roll)\n" +
		"cluster: events 800 lost 0 dup 2\n" +
		"cluster: searches answered with every shard 97.65% (166 of 170, longest gap 3.5s)\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	// A host that took two turns (its entry taken again after a failure): the turns add up.
	tsv = write(t, dir, "cluster.tsv", "what\tname\tvalue\nfloor\tindexer-1\t20.0\nturn\tindexer-1\t12.0\nturn\tindexer-1\t18.0\n")
	if out, err := Cluster(tsv); err != nil || !strings.Contains(out, "cluster: indexer-1 floor 20.0s turn 30.0s ratio 1.50×\n") {
		t.Errorf("two turns: %v\n%s", err, out)
	}
	// No probe rows: said, not a 100% share.
	tsv = write(t, dir, "cluster.tsv", "what\tname\tvalue\nfloor\tindexer-1\t20.0\nroll\t-\t40.0\nturn\tindexer-1\t40.0\nown\t-\t1.0\n")
	out, err = Cluster(tsv)
	if err != nil || !strings.Contains(out, "cluster: searches answered not measured") || strings.Contains(out, "every shard") {
		t.Errorf("without the probe: %v\n%s", err, out)
	}
	// A value that is not a number is an error naming the row.
	tsv = write(t, dir, "cluster.tsv", "what\tname\tvalue\nfloor\tindexer-1\t\n")
	if _, err := Cluster(tsv); err == nil || !strings.Contains(err.Error(), `row "floor\tindexer-1\t": column 3 is not a number`) {
		t.Errorf("an empty value: %v", err)
	}
}
