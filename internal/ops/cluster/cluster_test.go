package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/cluster"
)

// node is an in-memory indexer: PutSettings changes what Settings reads
// (unless ignore), the first down calls fail as a starting node does.
type node struct {
	persistent, transient map[string]string
	down                  int // calls that fail with ErrUnreachable
	ignore                bool
	putErr                error
	puts                  []indexer.SettingsUpdate

	flush     indexer.ShardsSummary
	flushErr  error
	synced    indexer.ShardsSummary
	partial   bool
	syncedErr error
	calls     []string

	shards     []indexer.Shard
	shardsErr  error
	explain    indexer.Explanation
	explainErr error
}

func (n *node) Settings(context.Context, bool) (indexer.Settings, error) {
	n.calls = append(n.calls, "settings")
	if n.down > 0 {
		n.down--
		return indexer.Settings{}, fmt.Errorf("GET /_cluster/settings: %w", netclient.ErrUnreachable)
	}
	return indexer.Settings{Persistent: clone(n.persistent), Transient: clone(n.transient)}, nil
}

func clone(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func apply(m map[string]string, u map[string]any) map[string]string {
	m = clone(m)
	for k, v := range u {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = fmt.Sprint(v)
		}
	}
	return m
}

func (n *node) PutSettings(_ context.Context, u indexer.SettingsUpdate) (bool, error) {
	n.calls = append(n.calls, "put")
	n.puts = append(n.puts, u)
	if n.putErr != nil {
		return false, n.putErr
	}
	if !n.ignore {
		n.persistent, n.transient = apply(n.persistent, u.Persistent), apply(n.transient, u.Transient)
	}
	return true, nil
}

func (n *node) CatShards(context.Context) ([]indexer.Shard, error) {
	n.calls = append(n.calls, "shards")
	return n.shards, n.shardsErr
}

func (n *node) AllocationExplain(_ context.Context, er indexer.ExplainRequest) (indexer.Explanation, error) {
	n.calls = append(n.calls, fmt.Sprintf("explain %s[%d]", er.Index, er.Shard))
	return n.explain, n.explainErr
}

func (n *node) Flush(context.Context) (indexer.ShardsSummary, error) {
	n.calls = append(n.calls, "flush")
	return n.flush, n.flushErr
}

func (n *node) SyncedFlush(context.Context) (indexer.ShardsSummary, bool, error) {
	n.calls = append(n.calls, "synced")
	return n.synced, n.partial, n.syncedErr
}

// await polls without sleeping, at most 10 times.
func await(ctx context.Context, what string, ready func() (bool, error)) error {
	for range 10 {
		ok, err := ready()
		if err != nil || ok {
			return err
		}
	}
	return errors.New("still waiting for " + what)
}

func TestSetAllocation(t *testing.T) {
	const key = indexer.KeyAllocationEnable
	tests := []struct {
		name      string
		node      node
		value     string
		opts      cluster.SetOptions
		wantErr   error  // errors.Is
		errText   string // substring
		before    string
		after     string
		resetsTr  bool
		changed   bool
		wantCalls string
	}{
		{name: "default to primaries", value: "primaries", before: "all", after: "primaries", changed: true, wantCalls: "settings put settings"},
		{name: "already primaries persistently", node: node{persistent: map[string]string{key: "primaries"}}, value: "primaries",
			before: "primaries", after: "primaries", wantCalls: "settings put settings"},
		{name: "a transient value would shadow it: reset", node: node{transient: map[string]string{key: "none"}}, value: "all",
			before: "none", after: "all", resetsTr: true, changed: true, wantCalls: "settings put settings"},
		{name: "acknowledged but not in effect", node: node{ignore: true}, value: "primaries",
			wantErr: cluster.ErrNotApplied, errText: "is all (default), want primaries", before: "all", after: "all", wantCalls: "settings put settings"},
		{name: "not acknowledged", node: node{putErr: indexer.ErrNotAcknowledged}, value: "primaries",
			wantErr: indexer.ErrNotAcknowledged, errText: "set cluster.routing.allocation.enable=primaries", before: "all", wantCalls: "settings put"},
		{name: "invalid value", value: "none", wantErr: cluster.ErrInvalidValue, wantCalls: ""},
		{name: "node not answering, no wait: error at once", node: node{down: 2}, value: "primaries",
			wantErr: netclient.ErrUnreachable, wantCalls: "settings"},
		{name: "node not answering, Await: waits, then sets", node: node{down: 2}, value: "primaries", opts: cluster.SetOptions{Await: await},
			before: "all", after: "primaries", changed: true, wantCalls: "settings settings settings put settings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node
			ch, err := cluster.SetAllocation(context.Background(), &n, tt.value, tt.opts)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("err %q, want it to say %q", err, tt.errText)
			}
			if ch.Before.Value != tt.before || ch.After.Value != tt.after || ch.Changed != tt.changed {
				t.Errorf("change %+v, want %s → %s changed=%v", ch, tt.before, tt.after, tt.changed)
			}
			if got := strings.Join(n.calls, " "); got != tt.wantCalls {
				t.Errorf("calls %q, want %q", got, tt.wantCalls)
			}
			if len(n.puts) > 0 {
				_, reset := n.puts[0].Transient[key]
				if n.puts[0].Persistent[key] != tt.value || reset != tt.resetsTr {
					t.Errorf("update %+v: want persistent %s, transient reset %v", n.puts[0], tt.value, tt.resetsTr)
				}
			}
		})
	}
}

func TestFlush(t *testing.T) {
	ok := indexer.ShardsSummary{Total: 4, Successful: 4}
	bad := indexer.ShardsSummary{Total: 4, Successful: 3, Failed: 1, Failures: []string{"siem-alerts[0]: engine closed"}}
	all := cluster.FlushOptions{Plain: true, Synced: true}
	tests := []struct {
		name        string
		node        node
		opts        cluster.FlushOptions
		wantErr     error
		errText     string
		calls       string
		flushed     int // rep.Flush.Successful
		synced      bool
		partial     bool
		unsupported bool
	}{
		{name: "flush then synced flush", node: node{flush: ok, synced: ok}, opts: all, calls: "flush synced", flushed: 4, synced: true},
		{name: "synced flush partial (409): tolerated", node: node{flush: ok, synced: bad, partial: true}, opts: all, calls: "flush synced", flushed: 4, synced: true, partial: true},
		{name: "no synced flush after a flush: reported, no second flush", node: node{flush: ok, syncedErr: indexer.ErrSyncedFlushUnsupported}, opts: all,
			calls: "flush synced", flushed: 4, unsupported: true},
		{name: "synced only, unsupported: a plain flush instead", node: node{flush: ok, syncedErr: indexer.ErrSyncedFlushUnsupported}, opts: cluster.FlushOptions{Synced: true},
			calls: "synced flush", flushed: 4, unsupported: true},
		{name: "synced only", node: node{synced: ok}, opts: cluster.FlushOptions{Synced: true}, calls: "synced", synced: true},
		{name: "flush with failed shards: reported", node: node{flush: bad, synced: ok}, opts: all, calls: "flush synced", flushed: 3, synced: true},
		{name: "flush with failed shards, strict: error", node: node{flush: bad}, opts: cluster.FlushOptions{Plain: true, Strict: true},
			wantErr: cluster.ErrShardsFailed, errText: "flush: 1 of 4 shards failed: siem-alerts[0]: engine closed", calls: "flush", flushed: 3},
		{name: "flush fails: no synced flush", node: node{flushErr: netclient.ErrUnreachable}, opts: all, wantErr: netclient.ErrUnreachable, calls: "flush"},
		{name: "synced flush fails", node: node{flush: ok, syncedErr: netclient.ErrTimeout}, opts: all, wantErr: netclient.ErrTimeout, errText: "synced flush:", calls: "flush synced", flushed: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node
			rep, err := cluster.Flush(context.Background(), &n, tt.opts)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("err %q, want it to say %q", err, tt.errText)
			}
			if got := strings.Join(n.calls, " "); got != tt.calls {
				t.Errorf("calls %q, want %q", got, tt.calls)
			}
			if rep.Flush.Successful != tt.flushed || (rep.Synced != nil) != tt.synced || rep.SyncedPartial != tt.partial || rep.SyncedUnsupported != tt.unsupported {
				t.Errorf("report %+v", rep)
			}
		})
	}
}
