package services

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/units"
)

// StatusOptions are the inputs of `services status`.
type StatusOptions struct {
	IO         *output.IOStreams
	Units      func(ctx context.Context) (services.Units, error)
	UnitMap    func() (map[string]string, error)
	Now        func() time.Time
	Output     string
	Timeout    time.Duration
	Components []string
	// Diagnose explains a unit that failed or is not coming up.
	Diagnose func(ctx context.Context, c services.Component, st units.UnitStatus) (diagnose.Report, error)
}

// NewCmdStatus builds `services status`.
func NewCmdStatus(f *cli.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IO, Units: unitsFrom(f), UnitMap: unitMapFrom(f), Now: f.Now, Diagnose: diagnoseFrom(f)}
	return &cobra.Command{
		Use:   "status [component...|all]",
		Short: "Show the units' state, since when, main PID and restart count",
		Long: `Show each unit's active/sub state, when it entered it, its main PID and how often systemd
restarted it. Exit code 3 when a unit is not active (like a failed health check).`,
		Example: `  siemctl services status
  siemctl services status manager -o json`,
		ValidArgsFunction: completeComponents,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			opts.Output, opts.Timeout, opts.Components = f.Global.Output, f.Global.Timeout, args
			return cli.Run(cmd.Context(), runF, runStatus, opts)
		},
	}
}

type statusJSON struct {
	Component   string     `json:"component"`
	Unit        string     `json:"unit"`
	LoadState   string     `json:"load_state"`
	ActiveState string     `json:"active_state"`
	SubState    string     `json:"sub_state"`
	Since       *time.Time `json:"since"`
	MainPID     uint32     `json:"main_pid"`
	Restarts    uint32     `json:"restarts"`
	Result      string     `json:"result,omitempty"`
	Enabled     string     `json:"unit_file_state"`
	// Diagnosis: why a failed unit failed (cause, evidence, fix).
	Diagnosis *diagnose.Report `json:"diagnosis,omitempty"`
}

func runStatus(ctx context.Context, opts *StatusOptions) error {
	comps, _, err := selected(opts.UnitMap, opts.Components)
	if err != nil {
		return err
	}
	ctx, u, cancel, err := cli.Connect(ctx, opts.Timeout, opts.Units)
	if err != nil {
		return err
	}
	defer cancel()
	r := &services.Runner{Units: u}
	sts, err := r.Status(ctx, comps)
	if err != nil {
		return err
	}
	inactive := len(services.Inactive(sts))
	diag := map[string]*diagnose.Report{}
	if opts.Diagnose != nil {
		for i, s := range sts {
			st := s.Status
			if s.Active || !s.Found || !(st.IsFailed() || st.ActiveState == units.Activating || (st.Result != "" && st.Result != "success")) {
				continue
			}
			if rep, err := opts.Diagnose(ctx, comps[i], st); err == nil {
				diag[s.Component] = &rep
			}
		}
	}
	if opts.Output == "json" {
		out := make([]statusJSON, 0, len(sts))
		for _, s := range sts {
			j := statusJSON{Component: s.Component, Unit: s.Unit, LoadState: s.Status.LoadState, ActiveState: s.Status.ActiveState,
				SubState: s.Status.SubState, MainPID: s.Status.MainPID, Restarts: s.Status.NRestarts, Result: s.Status.Result, Enabled: s.Status.UnitFileState,
				Diagnosis: diag[s.Component]}
			if !s.Status.ActiveSince.IsZero() && s.Active {
				t := s.Status.ActiveSince.UTC()
				j.Since = &t
			} else if !s.Status.StateChangedAt.IsZero() {
				t := s.Status.StateChangedAt.UTC()
				j.Since = &t
			}
			out = append(out, j)
		}
		if err := output.JSON(opts.IO.Out, out); err != nil {
			return err
		}
	} else {
		tty := opts.IO.IsStdoutTTY()
		p := opts.IO.Colors()
		t := output.NewTable(opts.IO.Out, tty, "component", "unit", "state", "since", "pid", "restarts")
		now := opts.Now()
		for _, s := range sts {
			state := s.Status.ActiveState + "/" + s.Status.SubState
			if !s.Found {
				state = "not-found"
			}
			switch {
			case s.Active:
				state = p.Green(state)
			case s.Status.IsFailed() || !s.Found:
				state = p.Red(state)
			default:
				state = p.Yellow(state)
			}
			when := s.Status.StateChangedAt
			if s.Active && !s.Status.ActiveSince.IsZero() {
				when = s.Status.ActiveSince
			}
			pid := "-"
			if s.Status.MainPID != 0 {
				pid = fmt.Sprint(s.Status.MainPID)
			}
			t.Row(s.Component, s.Unit, state, since(when, now, tty), pid, fmt.Sprint(s.Status.NRestarts))
		}
		if err := t.Render(); err != nil {
			return err
		}
		for _, s := range sts {
			if rep := diag[s.Component]; rep != nil {
				fmt.Fprintf(opts.IO.ErrOut, "\n%s (%s) %s:\n", s.Component, s.Unit, rep.Result)
				for _, l := range rep.Lines() {
					fmt.Fprintf(opts.IO.ErrOut, "  %s\n", l)
				}
			}
		}
	}
	if inactive > 0 {
		return &cli.ExitError{Code: cli.ExitNoGo, Reason: fmt.Sprintf("%d of %d units not active; start them with `siemctl services start`", inactive, len(sts))}
	}
	return nil
}
