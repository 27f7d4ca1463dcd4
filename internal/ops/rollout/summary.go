package rollout

import (
	"fmt"
	"strings"
	"time"
)

// Summary is the evidence of a whole roll, from its record: every entry (who, when, how long, the
// result) and the roll's totals. upgrade finish --cluster journals it; the run's report shows it.
type Summary struct {
	RunID   string         `json:"run_id"`
	From    string         `json:"from"`
	Target  string         `json:"target"`
	Phase   Phase          `json:"phase"`
	Created time.Time      `json:"created"`
	By      string         `json:"created_by"`
	Elected string         `json:"elected_manager,omitempty"`
	Entries []SummaryEntry `json:"entries"`
	Totals  SummaryTotals  `json:"totals"`
}

// SummaryEntry is one entry of the order as the roll left it.
type SummaryEntry struct {
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	Host      string    `json:"host,omitempty"`
	Started   time.Time `json:"started,omitzero"`
	Finished  time.Time `json:"finished,omitzero"`
	Duration  float64   `json:"duration_s"`
	State     State     `json:"state"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
}

// SummaryTotals are the roll's totals.
type SummaryTotals struct {
	Entries  int           `json:"entries"`
	States   map[State]int `json:"states"`
	Attempts int           `json:"attempts"`
	Retried  []string      `json:"retried,omitempty"` // entries that took more than one attempt
	Turns    float64       `json:"turns_s"`           // the sum of the entries' durations
	Wall     float64       `json:"wall_s"`            // from the record's creation to the summary
}

// Summarize makes the roll's summary at time end.
func (r Record) Summarize(end time.Time) Summary {
	s := Summary{RunID: r.RunID, From: r.From, Target: r.Target, Phase: r.Phase, Created: r.Created, By: r.CreatedBy,
		Elected: r.ElectedManager, Entries: []SummaryEntry{}, Totals: SummaryTotals{Entries: len(r.Order), States: r.Counts()}}
	for _, e := range r.Order {
		se := SummaryEntry{Name: e.Name, Role: e.Role, Host: e.Host, Started: e.Started, Finished: e.Finished,
			State: e.State, Attempts: e.Attempts, LastError: e.LastError}
		if !e.Started.IsZero() && !e.Finished.IsZero() {
			se.Duration = e.Finished.Sub(e.Started).Seconds()
		}
		s.Totals.Attempts += e.Attempts
		s.Totals.Turns += se.Duration
		if e.Attempts > 1 {
			s.Totals.Retried = append(s.Totals.Retried, e.Name)
		}
		s.Entries = append(s.Entries, se)
	}
	if !r.Created.IsZero() && end.After(r.Created) {
		s.Totals.Wall = end.Sub(r.Created).Seconds()
	}
	return s
}

// Line is the summary's totals in one line.
func (s Summary) Line() string {
	var states []string
	for _, st := range []State{Done, Running, Failed, Pending} {
		if n := s.Totals.States[st]; n > 0 {
			states = append(states, fmt.Sprintf("%d %s", n, st))
		}
	}
	line := fmt.Sprintf("run %s %s → %s: %d entries (%s), %d attempts, turns %.1fs of %.1fs wall",
		s.RunID, s.From, s.Target, s.Totals.Entries, strings.Join(states, ", "), s.Totals.Attempts, s.Totals.Turns, s.Totals.Wall)
	if len(s.Totals.Retried) > 0 {
		line += "; resumed: " + strings.Join(s.Totals.Retried, ", ")
	}
	return line
}
