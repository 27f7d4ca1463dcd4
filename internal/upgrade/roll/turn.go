package roll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/output"
)

// The turn of a host (docs/distributed.md): this host's entries of the order
// (rollout.HostIdentity), its turn taken or waited for in the coordination record, the work done
// under the turn's lease. Node calls InTurn around its node.yaml run and, for --dry-run, prints
// TurnCalls before the node phase's calls; the cluster rollback's node phase does the same.

// Defaults of the turn flags.
const (
	DefaultLease    = rollout.DefaultLease
	DefaultTurnPoll = 5 * time.Second
)

// TurnOptions are the turn flags (--wait, --lease) and what the turn needs.
type TurnOptions struct {
	Roll Deps
	// Wait is how long to wait for this host's turn (0: take it now or exit 7).
	Wait time.Duration
	// Lease is the turn's lease, renewed every third of it while the host works.
	Lease time.Duration
	// Poll is how often a waiting host asks again.
	Poll time.Duration
}

// AddFlags adds --wait and --lease (and the hidden --turn-poll) to fl: the turn flags are defined
// once, for upgrade node and rollback --cluster --phase node.
func (o *TurnOptions) AddFlags(fl *pflag.FlagSet) {
	fl.DurationVar(&o.Wait, "wait", 0, "wait up to this long for this host's turn of the rolling upgrade (0: exit 7 at once when it is another host's)")
	fl.DurationVar(&o.Lease, "lease", DefaultLease, "the turn's lease, renewed every third of it while this host works; past it the turn can be taken over")
	fl.DurationVar(&o.Poll, "turn-poll", DefaultTurnPoll, "how often a waiting host asks for its turn")
	_ = fl.MarkHidden("turn-poll")
}

// Check validates the flags (a usage error names the flag).
func (o *TurnOptions) Check() error {
	switch {
	case o.Wait < 0:
		return fmt.Errorf("--wait must not be negative")
	case o.Lease < rollout.MinLease:
		return fmt.Errorf("--lease must be at least %s", rollout.MinLease)
	}
	if o.Poll <= 0 {
		o.Poll = DefaultTurnPoll
	}
	return nil
}

// turnStore is this host's identity and the record's store, with the elected cluster manager
// re-read at each take.
func turnStore(ctx context.Context, d Deps) (rollout.Identity, *rollout.Store, error) {
	who, err := d.Identity()
	if err != nil {
		return who, nil, err
	}
	s, ix, err := d.Store(ctx)
	if err != nil {
		return who, nil, err
	}
	s.Elected = ix.ClusterManager
	return who, s, nil
}

// TakeTurn takes this host's turn, waiting up to o.Wait for it: a *rollout.NotYourTurnError
// (exit 7) names whose turn it is otherwise. The host lock must be free (another siemctl on this
// host would be resuming the same turn): it is checked first (exit 6 naming its holder).
func TakeTurn(ctx context.Context, o TurnOptions, errOut io.Writer) (*rollout.Turn, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	d := o.Roll
	if d.HostLock != nil {
		release, err := d.HostLock(ctx)
		if err != nil {
			return nil, err
		}
		release()
	}
	who, s, err := turnStore(ctx, d)
	if err != nil {
		return nil, err
	}
	var turn *rollout.Turn
	if o.Wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, o.Wait)
		fmt.Fprintf(errOut, "waiting up to %s for this host's turn (%s)\n", output.Duration(o.Wait), strings.Join(who.Names, ", "))
		turn, err = s.Wait(wctx, who, o.Lease, o.Poll, nil)
		cancel()
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	} else {
		turn, err = s.Take(ctx, who, o.Lease)
	}
	if err != nil {
		return nil, err
	}
	e := turn.Entry()
	verb := "took"
	if turn.Resumed {
		verb = "resumed"
	}
	fmt.Fprintf(errOut, "%s the turn of %s (%s: %s; attempt %d; lease %s, renewed every %s) in run %s to %s\n", verb, e.Name, e.Role,
		strings.Join(e.Components, ", "), e.Attempts, output.Duration(turn.Lease), output.Duration(turn.Lease/3), turn.RunID(), turn.Target())
	return turn, nil
}

// InTurn takes this host's turn (TakeTurn) and runs work under it (rollout.Turn.Run): the lease is
// renewed while work runs, work's context is cancelled when the turn is lost, the entry is marked
// done when work returns nil, given back when its error wraps rollout.ErrNothingDone, failed
// otherwise (the run stops: siemctl upgrade status --cluster shows it; the same command resumes
// it). Interrupted (ctx ends), the entry stays running for this host to resume.
func InTurn(ctx context.Context, o TurnOptions, errOut io.Writer, work func(ctx context.Context, turn *rollout.Turn) error) error {
	turn, err := TakeTurn(ctx, o, errOut)
	if err != nil {
		return err
	}
	err = turn.Run(ctx, func(wctx context.Context) error { return work(wctx, turn) })
	e := turn.Entry()
	switch {
	case err == nil:
		fmt.Fprintf(errOut, "%s done: the next turn is open\n", e.Name)
	case errors.Is(err, rollout.ErrNothingDone):
		fmt.Fprintf(errOut, "the turn of %s was given back: nothing was changed\n", e.Name)
	case ctx.Err() != nil:
		fmt.Fprintf(errOut, "interrupted: %s stays this host's turn until its lease ends (%s); run the same command again to resume it\n", e.Name, turn.Expiry().UTC().Format(time.RFC3339))
	default:
		if _, ok := noGoAfterStart(err); ok {
			// Past the point of no return: resuming would not help; the caller rolls back.
			fmt.Fprintf(errOut, "%s failed after its node ran the new version: the roll stops here\n", e.Name)
			break
		}
		fmt.Fprintf(errOut, "%s failed: the roll stops here (siemctl upgrade status --cluster); run the same command again on this host to resume it\n", e.Name)
	}
	return err
}

// TurnCalls are the turn's calls for a dry run: the record read, whose turn it is now, and the
// writes this host's turn would make.
func TurnCalls(ctx context.Context, o TurnOptions) ([]string, error) {
	who, s, err := turnStore(ctx, o.Roll)
	if err != nil {
		return nil, err
	}
	all := Calls()["node"]
	rec, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{all[0], all[1], all[2]}
	cur := "-"
	if i := rec.Current(); i >= 0 {
		cur = rec.Order[i].Name + " (" + string(rec.Order[i].State) + ")"
	}
	mine := ""
	for _, e := range rec.Order {
		if e.State != rollout.Done && slices.Contains(who.Names, e.Name) {
			mine = e.Name
			break
		}
	}
	if mine == "" {
		return append(out, fmt.Sprintf("# none of this host's entries (%s) is left in run %s; the turn now: %s", strings.Join(who.Names, ", "), rec.RunID, cur)), nil
	}
	out = append(out, fmt.Sprintf("%s [%s; the turn now: %s]", all[3], mine, cur))
	if strings.HasPrefix(mine, "indexer/") {
		out = append(out, CopiesCall)
	}
	return append(out, all[4], all[5]), nil
}

// CheckTurn says whether it is this host's turn now, read only (what Node would take): its entry
// and the record, or a *rollout.NotYourTurnError (exit 7). With o.Wait it asks again every o.Poll
// until the turn comes or o.Wait has passed, while the run is in apply or rolling.
func CheckTurn(ctx context.Context, o TurnOptions) (rollout.Identity, rollout.Entry, rollout.Record, error) {
	who, s, err := turnStore(ctx, o.Roll)
	if err != nil {
		return who, rollout.Entry{}, rollout.Record{}, err
	}
	deadline := time.Time{}
	if o.Wait > 0 {
		deadline = o.Roll.Clock().Add(o.Wait)
	}
	for {
		e, rec, err := s.Check(ctx, who)
		var nyt *rollout.NotYourTurnError
		if errors.As(err, &nyt) && !deadline.IsZero() && o.Roll.Clock().Before(deadline) &&
			(nyt.Phase == rollout.PhaseRolling || nyt.Phase == rollout.PhaseApply) {
			if serr := netclient.Sleep(ctx, o.Poll); serr != nil {
				return who, e, rec, serr
			}
			continue
		}
		return who, e, rec, err
	}
}

// Calls are the coordination record's requests, per verb (apply, node, status, finish).
func Calls() map[string][]string {
	create, read, write := rollout.Calls()
	return map[string][]string{
		"apply":  append(append([]string{}, rollout.FactCalls...), append(create, write+" (phase rolling)")...),
		"node":   {read, "GET /_nodes/http?filter_path=nodes.*.name,nodes.*.http.publish_address (the other nodes' addresses, kept in state_dir/" + rollout.NodesFile + ")", "GET /_cat/cluster_manager?format=json&h=node (indexer turns: the order is recomputed when it changed)", write + " (take the turn)", write + " (renew the lease every lease/3)", write + " (done or failed)"},
		"status": {read, "GET /_nodes/http?filter_path=nodes.*.name,nodes.*.http.publish_address (the other nodes' addresses, kept in state_dir/" + rollout.NodesFile + ": the record through them when indexer.url does not answer)"},
		"finish": {read, write + " (phase done)"},
	}
}
