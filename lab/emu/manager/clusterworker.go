package manager

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/renameio/v2"
	"github.com/siemctl/siemctl/lab/emu/faults"
)

// The worker side of the emulator's wazuh-clusterd (cluster.go): it connects to the master named in
// <nodes>, says hello, then keeps the session with keepalives, integrity sync and agent-info sync,
// and asks the master for the cluster's health.

func (d *ClusterDaemon) runWorker(ctx context.Context) {
	tag := "Worker " + d.o.Conf.NodeName
	for ctx.Err() == nil {
		if d.o.Faults.Active(faults.ClusterDown) {
			// wazuh-clusterd died on this node: nothing reconnects until the manager restarts.
			d.log.write("ERROR", "Cluster", "Main", "Unhandled exception: the cluster process stopped.")
			_ = faults.Set(d.o.Faults.Dir, faults.ClusterDown, false)
			removeDaemonPidfile(d.o.Home, "wazuh-clusterd")
			<-ctx.Done()
			return
		}
		addr := d.o.MasterAddr
		if addr == "" && len(d.o.Conf.Nodes) > 0 {
			addr = net.JoinHostPort(d.o.Conf.Nodes[0], strconv.Itoa(d.o.Conf.Port))
		}
		dialer := &net.Dialer{Timeout: 10 * time.Second}
		if ip := net.ParseIP(d.o.Conf.BindAddr); ip != nil && !ip.IsUnspecified() && d.o.MasterAddr == "" {
			dialer.LocalAddr = &net.TCPAddr{IP: ip} // the master sees the worker's own address
		}
		d.mu.Lock()
		d.masterAddr, d.dialer = addr, dialer
		d.mu.Unlock()
		c, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var se *os.SyscallError
			if errors.As(err, &se) && strings.Contains(se.Err.Error(), "connection refused") {
				d.log.write("ERROR", tag, "Main", "Could not connect to master. Trying again in 10 seconds.")
			} else {
				d.log.write("ERROR", tag, "Main", fmt.Sprintf("Could not connect to master: %v. Trying again in 10 seconds.", err))
			}
			sleepCtx(ctx, d.o.Retry)
			continue
		}
		d.workerSession(ctx, tag, c)
		if ctx.Err() != nil {
			return
		}
		if d.o.Faults.Active(faults.ClusterDown) {
			continue // the daemon dies now, not after the retry wait
		}
		d.log.write("INFO", tag, "Main", "The connection has been closed. Reconnecting in 10 seconds.")
		sleepCtx(ctx, d.o.Retry)
	}
}

func (d *ClusterDaemon) workerSession(ctx context.Context, tag string, c net.Conn) {
	rd := bufio.NewReader(c)
	d.mu.Lock()
	d.conn, d.rd = c, rd
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.conn, d.rd, d.connected = nil, nil, false
		d.mu.Unlock()
		_ = c.Close()
	}()
	reply, err := d.request(clusterMsg{Cmd: "hello", Name: d.o.Conf.NodeName, Cluster: d.o.Conf.Name, Type: d.o.Conf.NodeType, Version: d.o.Version})
	if err != nil {
		d.log.write("ERROR", tag, "Main", fmt.Sprintf("Could not connect to master: %v.", err))
		return
	}
	if reply.Err != nil {
		d.log.write("ERROR", tag, "Main", fmt.Sprintf("Could not connect to master: Error %d - %s.", reply.Err.Code, reply.Err.Message))
		return
	}
	d.mu.Lock()
	d.connected = true
	d.mu.Unlock()
	d.log.write("INFO", tag, "Main", "Successfully connected to master.")
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	loop := func(every time.Duration, first bool, fn func() error) {
		defer wg.Done()
		defer stop()
		if !first && !sleepCtx(sctx, every) {
			return
		}
		for {
			if d.o.Faults.Active(faults.ClusterDown) {
				return
			}
			if err := fn(); err != nil {
				return
			}
			if !sleepCtx(sctx, every) {
				return
			}
		}
	}
	wg.Add(4)
	go func() { defer wg.Done(); d.serveDAPI(sctx, tag) }()
	go loop(d.o.KeepAlive, true, func() error {
		r, err := d.request(clusterMsg{Cmd: "echo-c"})
		if err != nil {
			d.log.write("ERROR", tag, "Keep Alive", fmt.Sprintf("Error sending keep alive: %v", err))
			return err
		}
		d.log.write("INFO", tag, "Keep Alive", "Successful response from master: "+r.OK)
		return nil
	})
	go loop(d.o.SyncIntegrity, true, func() error {
		hash, _ := rulesetHash(d.o.Home)
		d.log.write("INFO", tag, "Integrity check", "Starting.")
		r, err := d.request(clusterMsg{Cmd: "sync_i_w_m", RulesetHash: hash})
		if err != nil {
			d.log.write("ERROR", tag, "Integrity check", fmt.Sprintf("Error synchronizing integrity: %v", err))
			return err
		}
		if len(r.Files) > 0 {
			d.log.write("INFO", tag, "Integrity sync", "Starting.")
			for rel, content := range r.Files {
				if !strings.HasPrefix(rel, "etc/rules/") && !strings.HasPrefix(rel, "etc/decoders/") || strings.Contains(rel, "..") {
					continue
				}
				_ = renameio.WriteFile(d.o.Home.Path(filepath.FromSlash(rel)), []byte(content), 0o660)
			}
			d.log.write("INFO", tag, "Integrity sync", fmt.Sprintf("Files to create: 0 | Files to update: %d | Files to delete: 0", len(r.Files)))
			d.log.write("INFO", tag, "Integrity sync", "Finished in 0.001s.")
		}
		d.log.write("INFO", tag, "Integrity check", "Finished in 0.001s.")
		return nil
	})
	go loop(d.o.SyncAgentInfo, true, func() error {
		d.log.write("INFO", tag, "Agent-info sync", "Starting.")
		r, err := d.request(clusterMsg{Cmd: "sync_a_w_m", Agents: d.agentInfo()})
		if err != nil {
			d.log.write("ERROR", tag, "Agent-info sync", fmt.Sprintf("Error synchronizing agent info: %v", err))
			return err
		}
		if r.Err != nil { // the master could not write them: the next sync tries again, the session goes on
			d.log.write("ERROR", tag, "Agent-info sync", fmt.Sprintf("Error synchronizing agent info: Error %d - %s", r.Err.Code, r.Err.Message))
			return nil
		}
		d.log.write("INFO", tag, "Agent-info sync", "Finished in 0.001s. Updated 1 chunks.")
		return nil
	})
	<-sctx.Done()
	_ = c.Close()
	wg.Wait()
	if ctx.Err() == nil {
		d.log.write("INFO", tag, "Main", "The master closed the connection")
	}
}

// request sends one message on the worker's connection and reads the answer (one at a time).
func (d *ClusterDaemon) request(m clusterMsg) (clusterMsg, error) {
	d.reqMu.Lock()
	defer d.reqMu.Unlock()
	d.mu.Lock()
	c, rd := d.conn, d.rd
	d.mu.Unlock()
	if c == nil {
		return clusterMsg{}, ErrClusterDisconnected
	}
	if err := writeMsg(c, m); err != nil {
		return clusterMsg{}, err
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	return readMsg(rd)
}

// Connected says whether a worker is connected to its master (always true on a master).
func (d *ClusterDaemon) Connected() bool {
	if d.o.Conf.NodeType == "master" {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.connected
}

// Health is the cluster's healthcheck as the master sees it, from any node: a worker asks its master
// (ErrClusterDisconnected while it cannot). filter keeps the named nodes (empty: all).
func (d *ClusterDaemon) Health(filter []string) ([]ClusterNode, error) {
	if d.o.Conf.NodeType == "master" {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.healthLocked(filter), nil
	}
	if !d.Connected() {
		return nil, ErrClusterDisconnected
	}
	r, err := d.request(clusterMsg{Cmd: "get_health", Filter: filter})
	if err != nil {
		return nil, ErrClusterDisconnected
	}
	if r.Err != nil {
		return nil, fmt.Errorf("error %d - %s", r.Err.Code, r.Err.Message)
	}
	return r.Nodes, nil
}
