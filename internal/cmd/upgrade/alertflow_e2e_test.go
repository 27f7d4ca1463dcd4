//go:build e2e

package upgrade_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siemctl/siemctl/lab"
)

// alertFlowPortOffset: the no-alert-lost lab (550 and 600 are this package's other labs).
const alertFlowPortOffset = 650

// flowDuring sends the flow's events at rate while run runs (from lead before it to lead after
// it) and returns the next sequence number.
func flowDuring(t *testing.T, lb *lab.Lab, tag string, first int, lead time.Duration, run func()) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg   sync.WaitGroup
		next int
		err  error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		next, err = lb.SendFlow(ctx, tag, 5, first)
	}()
	time.Sleep(lead)
	run()
	time.Sleep(lead)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("flow %s: sent events %d … %d (5/s)", tag, first, next-1)
	return next
}

// noneLost waits for the shipper to drain and asserts every flow event the manager wrote is
// searchable exactly once.
func noneLost(t *testing.T, lb *lab.Lab, tag, when string) lab.FlowReport {
	t.Helper()
	rep, err := lb.WaitFlow(context.Background(), tag, 4*time.Minute, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", when, rep)
	if rep.Written == 0 {
		t.Fatalf("%s: the manager wrote none of the flow's events", when)
	}
	if rep.Lost != 0 || rep.Duplicates != 0 || rep.Stray != 0 {
		t.Errorf("%s: lost %d (e.g. %v), duplicates %d, stray %d; want 0", when, rep.Lost, rep.LostSample, rep.Duplicates, rep.Stray)
	}
	return rep
}

// TestE2ENoAlertLost: events arrive at a steady 5/s through a snapshot-mode upgrade and then
// through the rollback to the snapshot. After each, every event that reached the manager's
// alerts file is searchable exactly once: the rollback restores the shipper's registry saved with
// the snapshot, so the alerts indexed after the snapshot (set aside with the new version's data)
// are sent again, and the lab's Filebeat module's deterministic ids keep them single.
func TestE2ENoAlertLost(t *testing.T) {
	l := upOld(t, alertFlowPortOffset)
	lb, err := lab.Open(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	mustCode(t, l.Siemctl("indexer", "repository", "prepare", "--yes"), 0, "indexer repository prepare")
	snap := []string{"SIEMCTL_INDEXER_DATA_SAFETY=snapshot"}
	const tag = "noloss"
	next := 1

	t.Run("upgrade", func(t *testing.T) {
		next = flowDuring(t, lb, tag, next, 15*time.Second, func() {
			r := siemctlEnv(t, l, snap, "upgrade", "apply", "--to", "4.10.0", "--yes")
			mustCode(t, r, 0, "upgrade apply (snapshot mode) with traffic")
			t.Logf("%s", lines(r.Stderr, "backup/shipper-registry", "indexer/snapshot "))
			if !strings.Contains(r.Stderr, "shipper registry") {
				t.Errorf("the upgrade did not save the shipper registry:\n%s", lines(r.Stderr, "backup/shipper-registry"))
			}
		})
		wantPackages(t, l.Dir, "4.10.0-1")
		noneLost(t, lb, tag, "after the upgrade")
	})

	t.Run("rollback", func(t *testing.T) {
		before, err := lb.CheckFlow(context.Background(), tag)
		if err != nil {
			t.Fatal(err)
		}
		next = flowDuring(t, lb, tag, next, 15*time.Second, func() {
			r := siemctlEnv(t, l, snap, "rollback", "--yes")
			mustCode(t, r, 0, "rollback to the snapshot with traffic")
			t.Logf("%s", lines(r.Stderr, "restore/shipper-registry", "restore/indexer-snapshot "))
			if !strings.Contains(r.Stderr, "restored from") {
				t.Errorf("the rollback did not restore the shipper registry:\n%s", lines(r.Stderr, "restore/shipper-registry"))
			}
		})
		wantPackages(t, l.Dir, "4.9.0-1")
		after := noneLost(t, lb, tag, "after the upgrade and the rollback")
		if after.Written <= before.Written {
			t.Errorf("no flow event reached the alerts file during the rollback (%d before, %d after)", before.Written, after.Written)
		}
	})
}
