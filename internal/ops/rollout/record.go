// Package rollout is the coordination of a rolling upgrade of a distributed deployment (README
// "Distributed upgrade"): the run's record lives in the indexer itself, one document in a small
// index every node holds a copy of (index.auto_expand_replicas 0-all), written only with optimistic
// concurrency (op_type=create, if_seq_no/if_primary_term). No coordination server of siemctl's own:
// the cluster's primary shard decides who wrote first, so two hosts cannot take the same turn, and a
// holder checks its lease before every write, so a holder whose lease ran out cannot write.
//
// The record holds the run (id, versions, phase), the order of the roll (Order: indexer nodes one
// at a time with the elected cluster manager last, then the manager master, then the workers, then
// the dashboards), each entry's state, and the holder of the current turn with its lease. A host
// takes its turn (Store.Take) as a *Turn, renews the lease while it works, and ends it with
// Turn.Done or Turn.Fail; any other host gets a *NotYourTurnError naming whose turn it is.
package rollout

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Index is the index of the coordination record; DocID its one document.
const (
	Index = "siemctl-rollout"
	DocID = "run"
)

// IndexBody creates Index: one shard, a copy on every node (the record is readable while any node
// answers), no refresh cost, the record's fields stored but not searched.
const IndexBody = `{"settings":{"index":{"number_of_shards":1,"auto_expand_replicas":"0-all","hidden":true}},` +
	`"mappings":{"dynamic":false,"properties":{"run_id":{"type":"keyword"},"phase":{"type":"keyword"},"updated":{"type":"date"}}}}`

// Phase is where the run is.
type Phase string

// Phases of a run, in order (a rollback leaves the line at any point).
const (
	PhaseApply       Phase = "apply"        // upgrade apply --cluster: preflight, backups, snapshot, allocation
	PhaseRolling     Phase = "rolling"      // upgrade node on each host in turn
	PhaseFinish      Phase = "finish"       // every entry done; upgrade finish --cluster
	PhaseDone        Phase = "done"         // finished
	PhaseRollingBack Phase = "rolling-back" // a no-go or rollback --cluster
	PhaseRolledBack  Phase = "rolled-back"
	PhaseFailed      Phase = "failed" // an entry failed; resume on its host or roll back
)

// Phases lists every phase, in order.
var Phases = []Phase{PhaseApply, PhaseRolling, PhaseFinish, PhaseDone, PhaseRollingBack, PhaseRolledBack, PhaseFailed}

// Ended: a run in this phase is over; a new run may replace its record.
func (p Phase) Ended() bool { return p == PhaseDone || p == PhaseRolledBack }

// State is an entry's state.
type State string

// Entry states.
const (
	Pending State = "pending"
	Running State = "running"
	Done    State = "done"
	Failed  State = "failed"
)

// Role is an entry's part in the deployment; it fixes where the entry goes in the order.
type Role string

// Roles, in roll order.
const (
	RoleIndexer        Role = "indexer"                 // an indexer node that is not the elected cluster manager
	RoleIndexerManager Role = "indexer-cluster-manager" // the elected cluster manager: last of the indexers
	RoleManagerMaster  Role = "manager-master"
	RoleManagerWorker  Role = "manager-worker"
	RoleDashboard      Role = "dashboard"
)

// Entry is one step of the roll: one cluster node (or dashboard) and the components its host
// upgrades in that turn.
type Entry struct {
	// Name is the entry's key, Key(kind, Node): "indexer/node-1", "manager/master-node",
	// "dashboard/10.0.0.5". A host owns the entries whose names its Identity lists.
	Name string `json:"name"`
	// Node is the node's name in its cluster (opensearch.yml node.name, ossec.conf
	// <cluster><node_name>) or, for a dashboard, the host of its URL.
	Node       string    `json:"node"`
	Role       Role      `json:"role"`
	Components []string  `json:"components"`
	Version    string    `json:"version,omitempty"` // the version the node ran when planned
	State      State     `json:"state"`
	Attempts   int       `json:"attempts"`
	Host       string    `json:"host,omitempty"` // the host that last took it (Identity.Host)
	Started    time.Time `json:"started,omitzero"`
	Finished   time.Time `json:"finished,omitzero"`
	LastError  string    `json:"last_error,omitempty"`
}

// Holder is who holds the current turn.
type Holder struct {
	Entry  string    `json:"entry"`           // the entry's Name
	Host   string    `json:"host"`            // Identity.Host of the taker
	Token  string    `json:"token,omitempty"` // random per take: only this Turn may write (status leaves it out)
	Since  time.Time `json:"since"`
	Expiry time.Time `json:"expiry"` // the lease: past it, the holder may not write and may be taken over
}

// Record is the run's coordination record.
type Record struct {
	RunID   string    `json:"run_id"`
	From    string    `json:"from"`
	Target  string    `json:"target"`
	Phase   Phase     `json:"phase"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// CreatedBy is the host that created the run (upgrade apply --cluster).
	CreatedBy string `json:"created_by"`
	// ElectedManager is the elected indexer cluster manager the order was last computed for.
	ElectedManager string  `json:"elected_manager,omitempty"`
	Order          []Entry `json:"order"`
	Holder         *Holder `json:"holder,omitempty"`
	// Note is the last phase change's reason (a failure, a rollback's cause).
	Note string `json:"note,omitempty"`
	// Rollback is set once the run is rolled back (rollback.go).
	Rollback *Rollback `json:"rollback,omitempty"`
	// Snapshot is the run's data-safety snapshot as `upgrade apply --cluster` recorded it (its
	// repository, name and the persistent settings recorded with it): a cluster rollback forms
	// the old-version cluster afresh from it (rollback.go).
	Snapshot json.RawMessage `json:"snapshot,omitempty"`

	// SeqNo and PrimaryTerm are the document's concurrency tokens when it was read.
	SeqNo       int64 `json:"-"`
	PrimaryTerm int64 `json:"-"`
}

// Current is the index of the entry whose turn it is: the first entry not done (-1: all done).
func (r Record) Current() int {
	for i, e := range r.Order {
		if e.State != Done {
			return i
		}
	}
	return -1
}

// Entry returns the entry named name.
func (r Record) Entry(name string) (Entry, bool) {
	i := r.indexOf(name)
	if i < 0 {
		return Entry{}, false
	}
	return r.Order[i], true
}

func (r Record) indexOf(name string) int {
	return slices.IndexFunc(r.Order, func(e Entry) bool { return e.Name == name })
}

// Counts returns how many entries are in each state.
func (r Record) Counts() map[State]int {
	out := map[State]int{Pending: 0, Running: 0, Done: 0, Failed: 0}
	for _, e := range r.Order {
		out[e.State]++
	}
	return out
}

// clone deep-copies r (the order and the holder), so a failed write leaves the caller's copy as read.
func (r Record) clone() Record {
	c := r
	c.Order = make([]Entry, len(r.Order))
	for i, e := range r.Order {
		e.Components = slices.Clone(e.Components)
		c.Order[i] = e
	}
	if r.Holder != nil {
		h := *r.Holder
		c.Holder = &h
	}
	if r.Rollback != nil {
		b := *r.Rollback
		c.Rollback = &b
	}
	return c
}

// Validate checks a record before it is created: an id, versions, a non-empty order of unique
// names with known roles in roll order.
func (r Record) Validate() error {
	switch {
	case r.RunID == "":
		return fmt.Errorf("%w: no run id", ErrInvalid)
	case r.Target == "":
		return fmt.Errorf("%w: no target version", ErrInvalid)
	case len(r.Order) == 0:
		return fmt.Errorf("%w: empty order", ErrInvalid)
	}
	seen := map[string]bool{}
	last := -1
	for _, e := range r.Order {
		if e.Name == "" {
			return fmt.Errorf("%w: an entry without a name", ErrInvalid)
		}
		if seen[e.Name] {
			return fmt.Errorf("%w: entry %s twice", ErrInvalid, e.Name)
		}
		seen[e.Name] = true
		rank := slices.Index(roleOrder, e.Role)
		if rank < 0 {
			return fmt.Errorf("%w: entry %s: unknown role %q", ErrInvalid, e.Name, e.Role)
		}
		if rank < last {
			return fmt.Errorf("%w: entry %s (%s) after a later role: the order is indexers (elected cluster manager last), manager master, workers, dashboards", ErrInvalid, e.Name, e.Role)
		}
		last = rank
	}
	return nil
}

// roleOrder is the order of the roles in a roll.
var roleOrder = []Role{RoleIndexer, RoleIndexerManager, RoleManagerMaster, RoleManagerWorker, RoleDashboard}

// NewRecord is a new run's record: the order computed from the facts (Order), pending, in phase
// apply; from is the version the deployment runs now, target the one it goes to, host the host
// that creates it. Store.Create writes it.
func NewRecord(runID, from, target, host string, f Facts) (Record, error) {
	order, err := Order(f)
	if err != nil {
		return Record{}, err
	}
	r := Record{RunID: runID, From: from, Target: target, Phase: PhaseApply, CreatedBy: host, ElectedManager: f.ElectedManager, Order: order}
	return r, r.Validate()
}
