package rollout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// DefaultLease is a turn's lease unless the caller says otherwise: longer than an indexer node's
// restart in its turn (during which this host may not reach the cluster to renew it), short
// enough that a crashed holder's turn can be taken over the same hour. The host that owns a turn
// resumes it at once, whatever its lease.
const DefaultLease = 10 * time.Minute

// MinLease is the shortest lease Take grants: a lease shorter than a round trip would expire
// before the holder could use it.
const MinLease = time.Second

// Turn is a held turn: the right to upgrade Entry's components until the lease expires. Only the
// Turn that took it can write (its token is in the record); every write first checks the lease.
type Turn struct {
	mu     sync.Mutex // Keep renews while the caller works
	store  *Store
	rec    Record
	entry  Entry
	expiry time.Time
	Host   string
	Token  string
	Lease  time.Duration
	// Resumed: this take resumed a turn this host (or an expired holder) had left running.
	Resumed bool
}

// Record is the record as this turn last wrote or read it.
func (t *Turn) Record() Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rec.clone()
}

// Entry is the turn's entry as last written.
func (t *Turn) Entry() Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entry
}

// Expiry is the lease's end as last written.
func (t *Turn) Expiry() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.expiry
}

// RunID is the run's id.
func (t *Turn) RunID() string { return t.Record().RunID }

// Target is the run's target version.
func (t *Turn) Target() string { return t.Record().Target }

// Take takes this host's turn: the first entry not done must be one of who's entries, the run
// must be rolling, and nobody else may hold the turn with a live lease. A turn held by this same
// host (a siemctl killed mid-turn, the host lock keeps two runs on one host apart) or whose lease
// has expired is taken over; a failed entry of this host is taken again (the run goes back to
// rolling). Anything else is a *NotYourTurnError naming whose turn it is and its state. With
// Store.Elected set, the order is first recomputed for the elected cluster manager now.
func (s *Store) Take(ctx context.Context, who Identity, lease time.Duration) (*Turn, error) {
	if who.Host == "" || len(who.Names) == 0 {
		return nil, fmt.Errorf("%w: an identity needs a host and at least one entry name", ErrInvalid)
	}
	if lease < MinLease {
		return nil, fmt.Errorf("%w: lease %s shorter than %s", ErrInvalid, lease, MinLease)
	}
	token := s.newToken()
	elected := ""
	if s.Elected != nil {
		// Best effort: without an elected cluster manager now the order stays as it is (the node's
		// own gates judge the cluster).
		elected, _ = s.Elected(ctx)
	}
	var (
		t       *Turn
		refused *NotYourTurnError
	)
	rec, err := s.update(ctx, func(r *Record) error {
		now := s.now()
		t, refused = nil, nil
		reordered := elected != "" && r.Phase == PhaseRolling && reorder(r, elected)
		i, resumed, nyt := decide(*r, who, now)
		if nyt != nil {
			if reordered {
				refused = nyt // the new order is written all the same
				return nil
			}
			return nyt
		}
		e := &r.Order[i]
		if r.Phase == PhaseFailed {
			r.Phase, r.Note = resumedPhase(*r), "resumed by "+who.Host+" at "+e.Name
		}
		e.State, e.Host, e.LastError = Running, who.Host, ""
		e.Attempts++
		if e.Started.IsZero() {
			e.Started = now
		}
		r.Holder = &Holder{Entry: e.Name, Host: who.Host, Token: token, Since: now, Expiry: now.Add(lease)}
		t = &Turn{store: s, entry: *e, Host: who.Host, Token: token, Lease: lease, expiry: r.Holder.Expiry, Resumed: resumed}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	t.rec = rec
	t.entry, _ = rec.Entry(t.entry.Name)
	return t, nil
}

// decide says whether who may take the turn in r now: the index of its entry and whether the take
// resumes a turn left running, or why not.
func decide(r Record, who Identity, now time.Time) (int, bool, *NotYourTurnError) {
	i := r.Current()
	nyt := notYourTurn(r, who, i)
	if !turnsOpen(r) && !(r.Phase == PhaseFailed && i >= 0 && who.owns(r.Order[i].Name) && r.Order[i].State == Failed) {
		return i, false, nyt
	}
	if i < 0 || !who.owns(r.Order[i].Name) {
		return i, false, nyt
	}
	e := r.Order[i]
	resumed := e.State == Running || e.State == Failed
	if h := r.Holder; h != nil && h.Entry == e.Name {
		if now.Before(h.Expiry) && h.Host != who.Host {
			return i, false, nyt
		}
		resumed = true
	}
	return i, resumed, nil
}

// Check says, without writing, whether Take would give who the turn now (with the order
// recomputed for the elected cluster manager, as Take would): its entry, or a *NotYourTurnError
// naming whose turn it is.
func (s *Store) Check(ctx context.Context, who Identity) (Entry, Record, error) {
	r, err := s.Load(ctx)
	if err != nil {
		return Entry{}, r, err
	}
	if s.Elected != nil && r.Phase == PhaseRolling {
		if elected, eerr := s.Elected(ctx); eerr == nil && elected != "" {
			r = r.clone()
			reorder(&r, elected) // as the next Take would (not written here)
		}
	}
	i, _, nyt := decide(r, who, s.now())
	if nyt != nil {
		return Entry{}, r, nyt
	}
	return r.Order[i], r, nil
}

// notYourTurn describes whose turn it is in r for who.
func notYourTurn(r Record, who Identity, i int) *NotYourTurnError {
	e := &NotYourTurnError{Phase: r.Phase}
	if i >= 0 {
		c := r.Order[i]
		e.Whose, e.Role, e.State = c.Name, c.Role, c.State
		if h := r.Holder; h != nil && h.Entry == c.Name {
			e.Holder, e.Expiry = h.Host, h.Expiry
		}
	}
	for _, x := range r.Order {
		if who.owns(x.Name) {
			e.Mine = append(e.Mine, x.Name+": "+string(x.State))
		}
	}
	return e
}

// Wait takes the turn as Take does, trying again every poll while it is another's, until ctx ends
// (then the last *NotYourTurnError is returned). Errors other than NotYourTurn end the wait.
func (s *Store) Wait(ctx context.Context, who Identity, lease, poll time.Duration, sleep func(context.Context, time.Duration) error) (*Turn, error) {
	if sleep == nil {
		sleep = netclient.Sleep
	}
	for {
		t, err := s.Take(ctx, who, lease)
		var nyt *NotYourTurnError
		if !errors.As(err, &nyt) {
			return t, err
		}
		if nyt.Phase != PhaseRolling && nyt.Phase != PhaseApply && nyt.Phase != PhaseRollingBack {
			return nil, err // the run will not come to this host by waiting (failed, rolling back, done)
		}
		if serr := sleep(ctx, poll); serr != nil {
			return nil, err
		}
	}
}

// mine applies change to the record if this turn still holds it with a live lease: the lease is
// checked on this host's clock before the request and against the record read just before the
// conditional write (a take-over in between makes the write lose).
func (t *Turn) mine(ctx context.Context, change func(r *Record, e *Entry, now time.Time)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now := t.store.now(); !now.Before(t.expiry) {
		return fmt.Errorf("%w: %s's lease ended %s ago; take the turn again (siemctl upgrade node)", ErrLeaseExpired, t.entry.Name, now.Sub(t.expiry).Round(time.Millisecond))
	}
	rec, err := t.store.update(ctx, func(r *Record) error {
		now := t.store.now()
		h := r.Holder
		if h == nil || h.Token != t.Token {
			who := "nobody"
			if h != nil {
				who = h.Host
			}
			return fmt.Errorf("%w: %s's turn is now held by %s", ErrLostTurn, t.entry.Name, who)
		}
		if !now.Before(h.Expiry) {
			return fmt.Errorf("%w: %s's lease ended at %s", ErrLeaseExpired, t.entry.Name, h.Expiry.Format(time.RFC3339))
		}
		i := r.indexOf(t.entry.Name)
		if i < 0 {
			return fmt.Errorf("%w: entry %s is no longer in the order", ErrInvalid, t.entry.Name)
		}
		change(r, &r.Order[i], now)
		return nil
	})
	if err != nil {
		return err
	}
	t.rec = rec
	t.entry, _ = rec.Entry(t.entry.Name)
	if rec.Holder != nil && rec.Holder.Token == t.Token {
		t.expiry = rec.Holder.Expiry
	}
	return nil
}

// Renew extends the lease by Lease from now. Call it well within the lease (a third of it).
func (t *Turn) Renew(ctx context.Context) error {
	return t.mine(ctx, func(r *Record, _ *Entry, now time.Time) {
		r.Holder.Expiry = now.Add(t.Lease)
	})
}

// Done marks the entry done and releases the turn; after the last entry the run moves to finish.
func (t *Turn) Done(ctx context.Context) error {
	return t.mine(ctx, func(r *Record, e *Entry, now time.Time) {
		e.State, e.Finished, e.LastError = Done, now, ""
		r.Holder = nil
		if r.Current() < 0 && r.Phase == PhaseRolling {
			r.Phase, r.Note = PhaseFinish, "every entry done"
		}
	})
}

// Fail marks the entry failed with cause, releases the turn and stops the run (phase failed):
// nobody's turn comes until this host resumes it or the deployment is rolled back.
func (t *Turn) Fail(ctx context.Context, cause error) error {
	msg := "failed"
	if cause != nil {
		msg = cause.Error()
	}
	return t.mine(ctx, func(r *Record, e *Entry, now time.Time) {
		e.State, e.Finished, e.LastError = Failed, now, msg
		r.Holder = nil
		r.Phase, r.Note = PhaseFailed, e.Name+": "+msg
	})
}

// Release gives the turn back without a verdict (nothing was changed): the entry is pending again
// and the next Take of its host starts it afresh; reason is kept as its last error.
func (t *Turn) Release(ctx context.Context, reason string) error {
	return t.mine(ctx, func(r *Record, e *Entry, _ time.Time) {
		e.State, e.LastError = Pending, reason
		r.Holder = nil
	})
}

// Keep renews the lease every Lease/3 until ctx ends or the turn is definitively not this
// holder's any more (ErrLostTurn: replaced; ErrLeaseExpired: not renewed in time); the returned
// channel gets that error (nil when ctx ended) and is closed. A renewal that does not reach the
// cluster (the node this host talks to is the one restarting in its turn) is tried again every
// Lease/10 until the lease runs out. The caller stops its work when it gets an error.
func (t *Turn) Keep(ctx context.Context) <-chan error {
	out := make(chan error, 1)
	go func() {
		defer close(out)
		every := t.Lease / 3
		for {
			if err := netclient.Sleep(ctx, every); err != nil {
				out <- nil
				return
			}
			err := t.Renew(ctx)
			switch {
			case err == nil:
				every = t.Lease / 3
			case ctx.Err() != nil:
				out <- nil
				return
			case errors.Is(err, ErrLostTurn) || errors.Is(err, ErrLeaseExpired) || errors.Is(err, ErrInvalid):
				out <- err
				return
			default:
				every = max(t.Lease/10, 100*time.Millisecond) // not answering: again soon, while the lease lives
			}
		}
	}()
	return out
}

// Run does work under the turn: the lease is renewed every Lease/3 while work runs (work's context
// is cancelled when a renewal fails: the turn is no longer this host's), then the entry is marked
// done (work returned nil), given back (an error wrapping ErrNothingDone: Release) or failed with
// work's error; when ctx ends the entry stays running for this host to resume. It returns work's error, or the renewal's
// (ErrLeaseExpired, ErrLostTurn), or the error of marking the entry.
func (t *Turn) Run(ctx context.Context, work func(ctx context.Context) error) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	kctx, stopKeep := context.WithCancel(ctx)
	kept := t.Keep(kctx)
	lost := make(chan error, 1)
	go func() {
		if err := <-kept; err != nil {
			lost <- err
			cancel(err)
		}
		close(lost)
	}()
	werr := work(wctx)
	stopKeep()
	if lerr := <-lost; lerr != nil {
		if werr == nil || errors.Is(werr, lerr) {
			return fmt.Errorf("%s: %w", t.Entry().Name, lerr)
		}
		return fmt.Errorf("%s: %w", t.Entry().Name, errors.Join(werr, lerr))
	}
	if ctx.Err() != nil {
		// Interrupted: the entry stays running with its lease; this host resumes it.
		return errors.Join(werr, ctx.Err())
	}
	if errors.Is(werr, ErrNothingDone) {
		if rerr := t.Release(ctx, werr.Error()); rerr != nil {
			return errors.Join(werr, fmt.Errorf("give %s's turn back: %w", t.Entry().Name, rerr))
		}
		return werr
	}
	if werr != nil {
		if ferr := t.Fail(ctx, werr); ferr != nil {
			return errors.Join(werr, fmt.Errorf("mark %s failed: %w", t.Entry().Name, ferr))
		}
		return werr
	}
	if err := t.Done(ctx); err != nil {
		return fmt.Errorf("mark %s done: %w", t.Entry().Name, err)
	}
	return nil
}
