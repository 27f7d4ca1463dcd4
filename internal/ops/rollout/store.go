package rollout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/indexer"
)

// API is what the store needs of the indexer (*indexer.Client).
type API interface {
	GetDocument(ctx context.Context, index, id string) (indexer.Document, error)
	PutDocument(ctx context.Context, index, id string, doc any, cond indexer.Condition) (indexer.Document, error)
	EnsureIndex(ctx context.Context, name string, body []byte) (bool, error)
}

// Errors of the store, matchable with errors.Is / errors.As.
var (
	// ErrNoRun: there is no run record (upgrade apply --cluster creates it).
	ErrNoRun = errors.New("no rolling upgrade run in the cluster")
	// ErrInvalid: a record or a request that cannot be right.
	ErrInvalid = errors.New("invalid rollout record")
	// ErrLeaseExpired: the turn's lease ran out (or another take replaced it); the holder may not write.
	ErrLeaseExpired = errors.New("turn lease expired")
	// ErrLostTurn: the record no longer names this turn as the holder (taken over after the lease ran out).
	ErrLostTurn = errors.New("turn lost")
	// ErrPhase: the run is not in a phase that allows the change.
	ErrPhase = errors.New("run not in the required phase")
	// ErrNotYourTurn matches every *NotYourTurnError (errors.Is).
	ErrNotYourTurn = errors.New("not this host's turn")
	// ErrNothingDone: work under a turn (Turn.Run) changed nothing; the turn is given back rather
	// than failed. Wrap it in the work's error.
	ErrNothingDone = errors.New("nothing was changed")
)

// RunExistsError: Create found a run that has not ended.
type RunExistsError struct {
	RunID  string
	Phase  Phase
	Target string
}

func (e *RunExistsError) Error() string {
	return fmt.Sprintf("a rolling upgrade run is already in the cluster: %s to %s, phase %s (siemctl upgrade status --cluster shows it; finish or roll it back first)", e.RunID, e.Target, e.Phase)
}

// NotYourTurnError: the turn is another entry's, or another host holds it.
type NotYourTurnError struct {
	Whose  string // the entry whose turn it is ("" when the run is not rolling)
	Role   Role
	State  State  // the entry's state
	Holder string // the host holding the turn ("" when nobody holds it)
	Expiry time.Time
	Phase  Phase
	// Mine are this host's entries and their states (name: state).
	Mine []string
}

func (e *NotYourTurnError) Error() string {
	var b strings.Builder
	b.WriteString("not this host's turn: ")
	switch {
	case e.Phase != PhaseRolling:
		fmt.Fprintf(&b, "the run is in phase %s", e.Phase)
		if e.Whose != "" {
			fmt.Fprintf(&b, ", at %s (%s, %s)", e.Whose, e.Role, e.State)
		}
	case e.Holder != "":
		fmt.Fprintf(&b, "it is %s's (%s, %s), held by host %s until %s", e.Whose, e.Role, e.State, e.Holder, e.Expiry.UTC().Format(time.RFC3339))
	default:
		fmt.Fprintf(&b, "it is %s's (%s, %s), not held", e.Whose, e.Role, e.State)
	}
	if len(e.Mine) > 0 {
		fmt.Fprintf(&b, "; this host's entries: %s", strings.Join(e.Mine, ", "))
	} else {
		b.WriteString("; no entry of the order is this host's")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNotYourTurn) true.
func (e *NotYourTurnError) Is(target error) bool { return target == ErrNotYourTurn }

// Identity is who takes a turn: the host's name (for the holder, shown by status) and the names of
// the entries this host owns (its indexer node.name, its manager node_name, its dashboard's host):
// see HostIdentity.
type Identity struct {
	Host  string
	Names []string
}

func (id Identity) owns(name string) bool { return slices.Contains(id.Names, name) }

// Store reads and writes the record.
type Store struct {
	API API
	// Now is the clock (nil: time.Now). Leases are wall-clock times in the record: hosts' clocks
	// must agree to well under a lease (NTP).
	Now func() time.Time
	// Elected, when set, names the indexer cluster's elected cluster manager now: Take re-orders
	// the pending indexer entries in the same write when it changed (ReOrder).
	Elected func(ctx context.Context) (string, error)
	// token makes a take's token (nil: 16 random bytes).
	token func() string
}

// NewStore returns a store over api.
func NewStore(api API) *Store { return &Store{API: api} }

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) newToken() string {
	if s.token != nil {
		return s.token()
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Calls are the requests the store makes, for dry runs: create, read, a conditional write.
func Calls() (create []string, read string, write string) {
	create = []string{"PUT /" + Index + " " + IndexBody, indexer.PutDocumentCall(Index, DocID, indexer.Condition{Create: true})}
	read = "GET /" + Index + "/_doc/" + DocID
	write = indexer.PutDocumentCall(Index, DocID, indexer.Condition{IfMatch: true, SeqNo: 0, PrimaryTerm: 0})
	write = strings.Replace(strings.Replace(write, "if_seq_no=0", "if_seq_no=<seq_no read>", 1), "if_primary_term=0", "if_primary_term=<primary_term read>", 1)
	return create, read, write
}

// Load reads the record (ErrNoRun when there is none).
func (s *Store) Load(ctx context.Context) (Record, error) {
	doc, err := s.API.GetDocument(ctx, Index, DocID)
	if errors.Is(err, indexer.ErrIndexNotFound) {
		return Record{}, ErrNoRun
	}
	if err != nil {
		return Record{}, fmt.Errorf("read the rollout record: %w", err)
	}
	if !doc.Found {
		return Record{}, ErrNoRun
	}
	var r Record
	if err := json.Unmarshal(doc.Source, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %s/_doc/%s: %v", ErrInvalid, Index, DocID, err)
	}
	r.SeqNo, r.PrimaryTerm = doc.SeqNo, doc.PrimaryTerm
	return r, nil
}

// write stores r if the document is still as read (r.SeqNo/PrimaryTerm) and returns it with the
// new tokens.
func (s *Store) write(ctx context.Context, r Record) (Record, error) {
	r.Updated = s.now()
	doc, err := s.API.PutDocument(ctx, Index, DocID, r, indexer.Condition{IfMatch: true, SeqNo: r.SeqNo, PrimaryTerm: r.PrimaryTerm})
	if err != nil {
		return Record{}, err
	}
	r.SeqNo, r.PrimaryTerm = doc.SeqNo, doc.PrimaryTerm
	return r, nil
}

// Create stores a new run's record (the index is created first when missing). A run that has not
// ended is a *RunExistsError; an ended one (done, rolled back) is replaced.
func (s *Store) Create(ctx context.Context, r Record) (Record, error) {
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	now := s.now()
	r = r.clone()
	if r.Phase == "" {
		r.Phase = PhaseApply
	}
	r.Created, r.Updated, r.Holder = now, now, nil
	for i := range r.Order {
		r.Order[i].State = Pending
	}
	if created, exists, err := s.putNew(ctx, r, "create the rollout record"); err != nil || !exists {
		return created, err
	}
	old, lerr := s.Load(ctx)
	if lerr != nil {
		return Record{}, lerr
	}
	if !old.Phase.Ended() {
		return Record{}, &RunExistsError{RunID: old.RunID, Phase: old.Phase, Target: old.Target}
	}
	r.SeqNo, r.PrimaryTerm = old.SeqNo, old.PrimaryTerm
	out, err := s.write(ctx, r)
	if errors.Is(err, indexer.ErrVersionConflict) {
		return Record{}, fmt.Errorf("create the rollout record: another host wrote it at the same time: %w", err)
	}
	return out, err
}

// update reads the record, applies change and writes it conditionally, retrying when another
// writer came in between (change runs again on the fresh record and may refuse).
func (s *Store) update(ctx context.Context, change func(*Record) error) (Record, error) {
	for attempt := 0; ; attempt++ {
		r, err := s.Load(ctx)
		if err != nil {
			return Record{}, err
		}
		n := r.clone()
		if err := change(&n); err != nil {
			return r, err
		}
		out, err := s.write(ctx, n)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, indexer.ErrVersionConflict) || attempt >= 20 {
			return Record{}, fmt.Errorf("write the rollout record: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return Record{}, err
		}
	}
}

// SetPhase moves the run from one of from (empty: any) to to, with a note.
func (s *Store) SetPhase(ctx context.Context, runID string, from []Phase, to Phase, note string) (Record, error) {
	if !slices.Contains(Phases, to) {
		return Record{}, fmt.Errorf("%w: phase %q", ErrInvalid, to)
	}
	return s.update(ctx, func(r *Record) error {
		if runID != "" && r.RunID != runID {
			return fmt.Errorf("%w: the cluster's run is %s, not %s", ErrPhase, r.RunID, runID)
		}
		if len(from) > 0 && !slices.Contains(from, r.Phase) {
			return fmt.Errorf("%w: run %s is %s, want %s", ErrPhase, r.RunID, r.Phase, joinPhases(from))
		}
		r.Phase, r.Note = to, note
		return nil
	})
}

func joinPhases(ps []Phase) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, " or ")
}

// ReOrder moves the pending indexer entries so that elected (a node name), the indexer cluster's
// elected cluster manager now, is the last indexer to roll (and its role says so); changed is false when
// the order already was so. An elected node not in the order, or already upgraded, changes the
// roles only.
func (s *Store) ReOrder(ctx context.Context, elected string) (Record, bool, error) {
	if elected == "" {
		return Record{}, false, fmt.Errorf("%w: no elected cluster manager", ErrInvalid)
	}
	changed := false
	r, err := s.update(ctx, func(r *Record) error {
		changed = reorder(r, elected)
		if !changed {
			return errUnchanged
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return r, false, nil
	}
	return r, changed, err
}

var errUnchanged = errors.New("unchanged")

// reorder applies ReOrder to r and says whether anything changed.
func reorder(r *Record, elected string) bool {
	before, _ := json.Marshal(r.Order)
	r.ElectedManager = elected
	var idx []int // positions of indexer entries
	for i, e := range r.Order {
		if e.Role == RoleIndexer || e.Role == RoleIndexerManager {
			idx = append(idx, i)
		}
	}
	// Done, running and failed entries keep their place and their role: the role an entry had
	// when its turn was taken is where it rolled (a done entry relabeled after a later election
	// would stand after a later role, and the record would no longer validate: issue 34). Pending
	// entries move, the elected one last.
	var fixed, movable []Entry
	for _, i := range idx {
		e := r.Order[i]
		if e.State == Pending {
			movable = append(movable, e)
		} else {
			fixed = append(fixed, e)
		}
	}
	var last []Entry
	var rest []Entry
	for _, e := range movable {
		e.Role = roleOf(e.Node, elected)
		if e.Node == elected {
			last = append(last, e)
		} else {
			rest = append(rest, e)
		}
	}
	merged := append(append(fixed, rest...), last...)
	for k, i := range idx {
		r.Order[i] = merged[k]
	}
	repairIndexerRoles(r)
	after, _ := json.Marshal(r.Order)
	return string(before) != string(after)
}

// repairIndexerRoles gives the indexer entries roles in roll order: an entry marked as the elected
// cluster manager that is not the last indexer entry (a record written by a siemctl that relabeled
// done entries at a later election) is marked as a plain indexer node again. It returns the entries
// it changed. The order itself is left as it is: it is the order the nodes rolled in.
func repairIndexerRoles(r *Record) []string {
	var idx []int
	for i, e := range r.Order {
		if e.Role == RoleIndexer || e.Role == RoleIndexerManager {
			idx = append(idx, i)
		}
	}
	var changed []string
	for k, i := range idx {
		if k < len(idx)-1 && r.Order[i].Role == RoleIndexerManager {
			r.Order[i].Role = RoleIndexer
			changed = append(changed, r.Order[i].Name)
		}
	}
	return changed
}

func roleOf(name, elected string) Role {
	if name == elected {
		return RoleIndexerManager
	}
	return RoleIndexer
}

// putNew writes r as the record only if there is none (the index created first, then
// op_type=create): the record written, or exists when one is already there (what names the write
// in an error).
func (s *Store) putNew(ctx context.Context, r Record, what string) (written Record, exists bool, err error) {
	if _, err := s.API.EnsureIndex(ctx, Index, []byte(IndexBody)); err != nil {
		return Record{}, false, fmt.Errorf("create index %s: %w", Index, err)
	}
	doc, err := s.API.PutDocument(ctx, Index, DocID, r, indexer.Condition{Create: true})
	switch {
	case err == nil:
		r.SeqNo, r.PrimaryTerm = doc.SeqNo, doc.PrimaryTerm
		return r, false, nil
	case errors.Is(err, indexer.ErrVersionConflict):
		return Record{}, true, nil
	}
	return Record{}, false, fmt.Errorf("%s: %w", what, err)
}
