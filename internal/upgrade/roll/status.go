package roll

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siemctl/siemctl/internal/ops/rollout"
)

// Status is the roll's state from its record (`upgrade status --cluster`'s output).
type Status struct {
	Now    time.Time      `json:"now"`
	Record rollout.Record `json:"record"`
	// Current is the entry whose turn it is ("" when every entry is done).
	Current string                `json:"current"`
	Counts  map[rollout.State]int `json:"counts"`
	// LeaseLeft is the holder's lease left in seconds (negative: expired; absent: no holder).
	LeaseLeft *float64 `json:"lease_left_s,omitempty"`
	// ThisHost is the host the command ran on and the entries that are its own (what a fleet
	// driver such as ansible/upgrade.yml maps the record's turns to its hosts with); absent when
	// they cannot be told, with ThisHostError saying why.
	ThisHost      *ThisHost `json:"this_host,omitempty"`
	ThisHostError string    `json:"this_host_error,omitempty"`
	// AnsweredBy names the indexer node that answered when indexer.url did not (absent when it did).
	AnsweredBy string `json:"answered_by,omitempty"`
}

// ThisHost is this host's identity in the record: its name and its entries.
type ThisHost struct {
	Host string   `json:"host"`
	Mine []string `json:"mine"`
}

// ReadStatus reads the roll's record, from any host: every entry's state, the holder of the turn
// and its lease left (its token never shown), and this host's own entries.
func ReadStatus(ctx context.Context, d Deps) (Status, error) {
	s, _, err := d.Store(ctx)
	if err != nil {
		return Status{}, err
	}
	rec, err := s.Load(ctx)
	if errors.Is(err, rollout.ErrNoRun) {
		return Status{}, fmt.Errorf("%w (siemctl upgrade apply --cluster --to V on the first host creates it)", err)
	}
	if err != nil {
		return Status{}, err
	}
	if rec.Holder != nil {
		// The holder's token lets whoever has it write as the holder: status never shows it.
		h := *rec.Holder
		h.Token = ""
		rec.Holder = &h
	}
	now := d.Clock()
	st := Status{Now: now, Record: rec, Counts: rec.Counts(), AnsweredBy: answeredBy(s)}
	if i := rec.Current(); i >= 0 {
		st.Current = rec.Order[i].Name
	}
	if rec.Holder != nil {
		left := rec.Holder.Expiry.Sub(now).Seconds()
		st.LeaseLeft = &left
	}
	if who, err := d.Identity(); err != nil {
		st.ThisHostError = err.Error()
	} else {
		st.ThisHost = &ThisHost{Host: who.Host, Mine: who.Names}
	}
	return st, nil
}
