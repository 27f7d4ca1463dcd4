// Package agents is `siemctl agents`: list (streamed, paginated, with the
// agent control tool as fallback), show, restart, remove and outdated.
package agents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/fleet"
	"github.com/siemctl/siemctl/internal/output"
)

// NewCmdAgents builds the `agents` group.
func NewCmdAgents(f *cli.Factory) *cobra.Command {
	return cli.Group(&cobra.Command{
		Use:   "agents",
		Short: "List, inspect, restart and remove the manager's agents",
		Long: `Work with the agents registered on the manager, through its REST API.

Agent ids are three digits (001); 000 is the manager itself and is refused for restart
and remove. Ids are checked before anything is sent.`,
		Example: `  siemctl agents list --status disconnected --older-than 7d
  siemctl agents show 001
  siemctl agents restart 001 002
  siemctl agents remove 003 --yes
  siemctl agents outdated`,
	}, NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdRestart(f, nil), NewCmdRemove(f, nil), NewCmdOutdated(f, nil), NewCmdUpgrade(f, nil))
}

// Fleet is what the agent commands share: the manager API and tools, each
// opened when a command needs it.
type Fleet struct {
	API   func(ctx context.Context) (fleet.API, error)
	Tools func(ctx context.Context) (fleet.Tools, error)
}

func fleetFrom(f *cli.Factory) Fleet {
	return Fleet{
		API: func(ctx context.Context) (fleet.API, error) {
			c, err := f.Manager(ctx)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Tools: func(ctx context.Context) (fleet.Tools, error) {
			return f.ManagerTools(ctx)
		},
	}
}

// open returns the manager API and the agent control tool (the fallback of
// list and show).
func (c Fleet) open(ctx context.Context) (fleet.API, fleet.Tools, error) {
	api, err := c.API(ctx)
	if err != nil {
		return nil, nil, err
	}
	tools, err := c.Tools(ctx)
	if err != nil {
		return nil, nil, err
	}
	return api, tools, nil
}

// usage turns invalid input into a usage error (exit 2).
func usage(err error) error {
	if errors.Is(err, fleet.ErrInvalidInput) {
		return &cli.FlagError{Err: err}
	}
	return err
}

// timeoutError names --timeout in a timeout that ctx's deadline caused,
// with what the operator should know (note) about an action that may have
// happened anyway.
func timeoutError(ctx context.Context, err error, d time.Duration, note string) error {
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(err, netclient.ErrTimeout) {
		return err
	}
	if note != "" {
		return fmt.Errorf("no answer from the manager within %s (--timeout); %s: %w", d, note, err)
	}
	return fmt.Errorf("no answer from the manager within %s (--timeout): %w", d, err)
}

func timeStr(t time.Time, tty bool) string {
	if t.IsZero() {
		return "-"
	}
	if t.Year() >= 9999 {
		return "never (manager)"
	}
	if tty {
		return t.UTC().Format("2006-01-02 15:04:05")
	}
	return t.UTC().Format(time.RFC3339)
}

func statusColor(p *output.Palette, s string) string {
	switch s {
	case "active":
		return p.Green(s)
	case "disconnected":
		return p.Red(s)
	case "never_connected", "pending":
		return p.Yellow(s)
	}
	return s
}
