package security

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/ops/secadmin"
	"github.com/siemctl/siemctl/internal/output"
)

// UsersListOptions are the inputs of `security api-users list`.
type UsersListOptions struct {
	IO      *output.IOStreams
	API     func(ctx context.Context) (secadmin.UsersAPI, error)
	Output  string
	Timeout time.Duration
}

// NewCmdUsersList builds `security api-users list`.
func NewCmdUsersList(f *cli.Factory, runF func(context.Context, *UsersListOptions) error) *cobra.Command {
	opts := &UsersListOptions{IO: f.IO, API: usersAPIFrom(f)}
	return &cobra.Command{
		Use:     "list",
		Short:   "List the manager API's users and their roles",
		Example: "  siemctl security api-users list\n  siemctl security api-users list -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(f, "table", "json"); err != nil {
				return err
			}
			opts.Output, opts.Timeout = f.Global.Output, f.Global.Timeout
			return cli.Run(cmd.Context(), runF, runUsersList, opts)
		},
	}
}

func runUsersList(ctx context.Context, opts *UsersListOptions) error {
	ctx, api, cancel, err := cli.Connect(ctx, opts.Timeout, opts.API)
	if err != nil {
		return err
	}
	defer cancel()
	users, err := secadmin.ListAPIUsers(ctx, api)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, users)
	}
	t := output.NewTable(opts.IO.Out, opts.IO.IsStdoutTTY(), "id", "username", "roles", "admin", "run_as")
	for _, u := range users {
		roles := make([]string, len(u.Roles))
		for i, r := range u.Roles {
			roles[i] = fmt.Sprint(r)
		}
		t.Row(fmt.Sprint(u.ID), u.Username, output.Dash(strings.Join(roles, ",")), yesNo(u.Admin), yesNo(u.AllowRunAs))
	}
	return t.Render()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// UsersAddOptions are the inputs of `security api-users add`.
type UsersAddOptions struct {
	IO            *output.IOStreams
	API           func(ctx context.Context) (secadmin.UsersAPI, error)
	Self          func() (string, error) // the configured API user
	Output        string
	Timeout       time.Duration
	Name          string
	PasswordFile  string
	PasswordStdin bool
	Change        cli.Change
}

// NewCmdUsersAdd builds `security api-users add NAME`.
func NewCmdUsersAdd(f *cli.Factory, runF func(context.Context, *UsersAddOptions) error) *cobra.Command {
	opts := &UsersAddOptions{IO: f.IO, API: usersAPIFrom(f), Self: func() (string, error) {
		cfg, err := f.Config()
		if err != nil {
			return "", err
		}
		return cfg.Manager.Username, nil
	}}
	cmd := f.ChangeCommand(&cobra.Command{
		Use:   "add NAME --password-file F | --password-stdin",
		Short: "Create a manager API user (password from a file or stdin)",
		Long: `Create an API user. The password comes from --password-file or --password-stdin (never a flag)
and is checked against the API's policy before anything is sent: 8 to 64 characters with an
upper and a lower case letter, a digit and a symbol; the name is 4 to 64 characters. The
configured API user (manager.username) must be an administrator. The new user has no role.
Asks for confirmation on a terminal (--yes off one) and takes the host lock (exit 6 while an
upgrade runs); --dry-run prints the request (never the password) instead.`,
		Example: `  siemctl security api-users add ops-bot --password-file /root/ops-bot.pw
  printf '%s' "$PW" | siemctl security api-users add ops-bot --password-stdin --yes -o json
  siemctl security api-users add ops-bot --password-file /root/ops-bot.pw --dry-run`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string, change cli.Change) error {
		if (opts.PasswordFile == "") == !opts.PasswordStdin {
			return cli.FlagErrorf("give exactly one of --password-file and --password-stdin")
		}
		opts.Output, opts.Timeout, opts.Name = f.Global.Output, f.Global.Timeout, args[0]
		opts.Change = change
		if err := manager.ValidateUsername(opts.Name); err != nil {
			return &cli.FlagError{Err: err}
		}
		return cli.Run(cmd.Context(), runF, runUsersAdd, opts)
	})
	cmd.Flags().StringVar(&opts.PasswordFile, "password-file", "", "read the new user's password from this file")
	cmd.Flags().BoolVar(&opts.PasswordStdin, "password-stdin", false, "read the new user's password from stdin")
	return cmd
}

func runUsersAdd(ctx context.Context, opts *UsersAddOptions) error {
	pw, err := ReadPassword(PasswordSource{File: opts.PasswordFile, Stdin: opts.IO.In, CanPrompt: opts.IO.CanPrompt(), Warn: opts.IO.ErrOut})
	if err != nil {
		return err
	}
	if err := secadmin.ValidateNewUser(opts.Name, pw); err != nil {
		var ie *manager.ItemError
		if errors.As(err, &ie) {
			return &cli.FlagError{Err: fmt.Errorf("%w: %s; nothing was sent", err, ie.Remediation)}
		}
		return &cli.FlagError{Err: err}
	}
	release, proceed, err := opts.Change.Begin(ctx, fmt.Sprintf("Create the manager API user %s?", opts.Name), cli.Calls(manager.CreateUserCall(opts.Name)))
	if !proceed {
		return err
	}
	defer release()
	self, err := opts.Self()
	if err != nil {
		return err
	}
	ctx, api, cancel, err := cli.Connect(ctx, opts.Timeout, opts.API)
	if err != nil {
		return err
	}
	defer cancel()
	u, err := secadmin.AddAPIUser(ctx, api, self, opts.Name, pw)
	if err != nil {
		if errors.Is(err, secadmin.ErrNotAdmin) {
			return &cli.ExitError{Code: cli.ExitAuth, Reason: err.Error()}
		}
		return err
	}
	if opts.Output == "json" {
		return output.JSON(opts.IO.Out, u)
	}
	fmt.Fprintf(opts.IO.Out, "created API user %s (id %d)\n", u.Username, u.ID)
	fmt.Fprintln(opts.IO.ErrOut, "the user has no role yet: assign one in the manager's RBAC before using it")
	return nil
}
