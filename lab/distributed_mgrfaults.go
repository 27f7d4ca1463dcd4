package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/lab/emu/faults"
)

// The manager cluster's faults: a worker out of the cluster, by a dead wazuh-clusterd
// (worker-disconnected) or by a version the master refuses with 3031 (worker-version-mismatch).

// mgrFaultKinds are the distributed lab's manager-cluster faults.
var mgrFaultKinds = []FaultKind{
	{"worker-disconnected", "wazuh-clusterd dies on the worker (manager-2): the master drops it from the cluster; the fix is restarting the worker's manager, which heal does", false},
	{"worker-version-mismatch", "the worker's installed version becomes the next patch release (its VERSION file, as if upgraded alone) and it restarts: the master refuses it with 3031 and it retries every 10 s; heal puts the master's version back and restarts it", false},
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

// workerVersionMismatch gives the worker the next patch version (VERSION) and restarts it; heal
// writes the master's version back and restarts it.
func (d *Distributed) workerVersionMismatch(ctx context.Context, on bool) error {
	w, err := d.worker()
	if err != nil {
		return err
	}
	ms := d.HostsOf(RoleManager)
	master, err := os.ReadFile(filepath.Join(ms[0].managerDir(), "VERSION"))
	if err != nil {
		return err
	}
	v := strings.TrimSpace(string(master))
	_ = faults.Set(faults.DirForRoot(w.st.Root), faults.ClusterDown, false) // this fault is about the version alone
	if on {
		var ma, mi, pa int
		if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d.%d", &ma, &mi, &pa); err != nil {
			return fmt.Errorf("master VERSION %q: %w", v, err)
		}
		v = fmt.Sprintf("v%d.%d.%d", ma, mi, pa+1)
	}
	if err := os.WriteFile(filepath.Join(w.managerDir(), "VERSION"), []byte(v+"\n"), 0o644); err != nil {
		return err
	}
	if err := d.restartManager(ctx, w); err != nil {
		return err
	}
	return d.waitWorker(ctx, w.st.Host, !on)
}
