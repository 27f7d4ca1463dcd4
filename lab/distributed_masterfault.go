package lab

import (
	"context"
)

// masterFaultKind is the other side of worker-version-mismatch: the master on another release
// than its workers, as when it was changed alone mid-roll; every worker is refused with 3031.
var masterFaultKind = FaultKind{"master-version-mismatch", "the master (manager-1) gets the lab's other release of the manager package with apt, as if changed alone, and restarts: the worker (manager-2) on the master's former release is refused with 3031 and retries every 10 s; the fix is bringing the older of the two to the newer release; heal installs the worker's release on the master", false}

// masterVersionMismatch installs on the master the other release than it runs (on) or the
// worker's release (off) and restarts the master's manager. On, it waits until the master answers
// (the worker may be mid-turn, its manager stopped: it is refused once it runs another release
// than the master); off, until the master lists the worker again (nothing to install when the
// printed fix was followed).
func (d *Distributed) masterVersionMismatch(ctx context.Context, on bool) error {
	master, w, mv, err := d.managerPair(ctx)
	if err != nil {
		return err
	}
	pkg, a := master.prof.Manager, master.apt()
	want := mv
	if on {
		if want, err = otherRelease(mv); err != nil {
			return err
		}
	} else {
		wv, err := w.apt().InstalledVersion(ctx, pkg)
		if err != nil {
			return err
		}
		if wv != "" {
			want = wv
		}
	}
	if want != mv {
		if err := a.Install(ctx, pkg+"="+want); err != nil {
			return err
		}
		if err := d.restartManager(ctx, master); err != nil {
			return err
		}
	}
	if !on {
		return d.waitWorker(ctx, w.st.Host, true)
	}
	ctx, cancel := context.WithTimeout(ctx, d.tmo)
	defer cancel()
	return poll(ctx, d.poll, func() (bool, error) {
		_, err := d.clusterNodes(ctx)
		return err == nil, nil
	})
}
