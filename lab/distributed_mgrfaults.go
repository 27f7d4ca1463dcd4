package lab

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// The manager cluster's faults: a worker out of the cluster, by a dead wazuh-clusterd
// (worker-disconnected) or by a version the master refuses with 3031 (worker-version-mismatch).

// mgrFaultKinds are the distributed lab's manager-cluster faults.
var mgrFaultKinds = []FaultKind{
	{"worker-disconnected", "wazuh-clusterd dies on the worker (manager-2): the master drops it from the cluster; the fix is restarting the worker's manager, which heal does", false},
	{"worker-version-mismatch", "the worker (manager-2) gets the lab's other release of the manager package with apt, as if upgraded alone, and restarts: the master refuses it with 3031 and it retries every 10 s; the fix is bringing the older of the two to the newer release; heal installs the master's release on the worker", false},
}

// worker is the manager cluster's first worker (the master is the first manager host).
func (d *Distributed) worker() (*Lab, error) {
	if ms := d.HostsOf(RoleManager); len(ms) > 1 {
		return ms[1], nil
	}
	return nil, fmt.Errorf("the lab has no manager worker")
}

// clusterNodes runs the master's cluster_control -l and returns its output.
func (d *Distributed) clusterNodes(ctx context.Context) (string, error) {
	ms := d.HostsOf(RoleManager)
	if len(ms) == 0 {
		return "", fmt.Errorf("the lab has no manager")
	}
	m := ms[0]
	cmd := exec.CommandContext(ctx, filepath.Join(m.managerDir(), "bin", "cluster_control"), "-l")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// waitWorker waits until the master lists the worker (in) or no longer does.
func (d *Distributed) waitWorker(ctx context.Context, name string, in bool) error {
	ctx, cancel := context.WithTimeout(ctx, d.tmo)
	defer cancel()
	last := ""
	err := poll(ctx, d.poll, func() (bool, error) {
		out, err := d.clusterNodes(ctx)
		last = out
		if err != nil {
			return false, nil
		}
		listed := false
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == name {
				listed = true
			}
		}
		return listed == in, nil
	})
	if err != nil {
		return fmt.Errorf("master's cluster_control -l (waiting for %s listed=%v): %s: %w", name, in, strings.TrimSpace(last), err)
	}
	return nil
}

func (d *Distributed) restartManager(ctx context.Context, h *Lab) error {
	unit := h.prof.ManagerUnit()
	if err := h.stopUnit(ctx, unit); err != nil {
		return err
	}
	return h.startUnit(ctx, unit)
}

// workerDisconnected kills the worker's cluster daemon (the emulator's cluster-down fault, consumed by
// it) and waits until the master drops it; heal restarts the worker's manager and waits until it is
// back.
func (d *Distributed) workerDisconnected(ctx context.Context, on bool) error {
	w, err := d.worker()
	if err != nil {
		return err
	}
	if on {
		if err := faults.Set(faults.DirForRoot(w.st.Root), faults.ClusterDown, true); err != nil {
			return err
		}
		return d.waitWorker(ctx, w.st.Host, false)
	}
	_ = faults.Set(faults.DirForRoot(w.st.Root), faults.ClusterDown, false)
	if out, _ := d.clusterNodes(ctx); !strings.Contains(out, w.st.Host+" ") {
		if err := d.restartManager(ctx, w); err != nil {
			return err
		}
	}
	return d.waitWorker(ctx, w.st.Host, true)
}

// workerVersionMismatch installs on the worker, with its apt from the lab's repository (as an
// operator upgrading that host alone would), the other release of the manager package than the
// master runs, and restarts the worker's manager: the master refuses it with 3031. Heal installs
// the master's release on the worker (nothing to do when the fix health prints was followed and
// both already agree) and waits until the master lists it again.
func (d *Distributed) workerVersionMismatch(ctx context.Context, on bool) error {
	master, w, mv, err := d.managerPair(ctx)
	if err != nil {
		return err
	}
	pkg := master.prof.Manager
	_ = faults.Set(faults.DirForRoot(w.st.Root), faults.ClusterDown, false) // this fault is about the version alone
	want := mv
	if on {
		if want, err = otherRelease(mv); err != nil {
			return err
		}
	}
	a := w.apt()
	if cur, err := a.InstalledVersion(ctx, pkg); err != nil {
		return err
	} else if cur != want {
		if err := a.Install(ctx, pkg+"="+want); err != nil {
			return err
		}
		if err := d.restartManager(ctx, w); err != nil {
			return err
		}
	}
	return d.waitWorker(ctx, w.st.Host, !on)
}

// managerPair is the master, the worker and the release of the manager package installed on the
// master (the two version-mismatch faults set one against the other).
func (d *Distributed) managerPair(ctx context.Context) (master, worker *Lab, installed string, err error) {
	if worker, err = d.worker(); err != nil {
		return nil, nil, "", err
	}
	master = d.HostsOf(RoleManager)[0]
	pkg := master.prof.Manager
	if installed, err = master.apt().InstalledVersion(ctx, pkg); err != nil {
		return nil, nil, "", err
	}
	if installed == "" {
		return nil, nil, "", fmt.Errorf("%s is not installed on the master %s", pkg, master.st.Host)
	}
	return master, worker, installed, nil
}

// otherRelease is the Debian version of the lab's other release than installed: the next newer
// of its set (SetOf), else the one before it.
func otherRelease(installed string) (string, error) {
	up, _, _ := strings.Cut(installed, "-")
	set := SetOf(up)
	if i := slices.Index(set, up); i >= 0 && len(set) > 1 {
		if i+1 < len(set) {
			return set[i+1] + "-1", nil
		}
		return set[i-1] + "-1", nil
	}
	return "", fmt.Errorf("the lab builds no other release than %s (%s)", installed, strings.Join(SetOf(up), ", "))
}
