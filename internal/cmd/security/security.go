// Package security is `siemctl security`: the manager API's users, indexer
// password hashes, and backup/apply of the indexer security configuration.
package security

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/ops/secadmin"
	"github.com/siemctl/siemctl/internal/output"
)

// NewCmdSecurity builds the `security` group.
func NewCmdSecurity(f *cli.Factory) *cobra.Command {
	users := cli.Group(&cobra.Command{
		Use:     "api-users",
		Short:   "List and create manager API users",
		Example: "  siemctl security api-users list -o json",
	}, NewCmdUsersList(f, nil), NewCmdUsersAdd(f, nil))
	idx := cli.Group(&cobra.Command{
		Use:     "indexer",
		Short:   "Indexer password hashes and security configuration backup/apply",
		Example: "  siemctl security indexer backup /var/backups/siemctl/security",
	}, NewCmdHash(f, nil), NewCmdBackup(f, nil), NewCmdApply(f, nil))
	return cli.Group(&cobra.Command{
		Use:   "security",
		Short: "Manager API users, indexer password hashes, indexer security configuration",
		Long: `Credentials and security configuration of the stack. Passwords are read from a file or
from stdin, never from a flag, and never reach a child process's command line or any output.`,
		Example: `  siemctl security api-users list
  siemctl security api-users add ops-bot --password-file /root/ops-bot.pw
  printf '%s' "$PW" | siemctl security indexer hash
  siemctl security indexer backup /var/backups/siemctl/security
  siemctl security indexer apply --yes`,
	}, users, idx)
}

// maxPassword bounds what is read as a password.
const maxPassword = 4096

// PasswordSource says where a password comes from.
type PasswordSource struct {
	File  string // path, or "" for stdin
	Stdin io.Reader
	// CanPrompt: stdin is a terminal (then stdin is refused: the password
	// would echo).
	CanPrompt bool
	Warn      io.Writer
}

// ReadPassword reads one password: the whole file or stdin, without one
// trailing line break. The password is never part of an error.
func ReadPassword(src PasswordSource) (string, error) {
	var b []byte
	var err error
	if src.File != "" {
		if st, serr := os.Stat(src.File); serr == nil && st.Mode().Perm()&0o077 != 0 && src.Warn != nil {
			fmt.Fprintf(src.Warn, "warning: %s is readable by group or others (mode %04o); chmod 600 it\n", src.File, st.Mode().Perm())
		}
		f, oerr := os.Open(src.File)
		if oerr != nil {
			return "", fmt.Errorf("password file: %w", oerr)
		}
		defer f.Close()
		b, err = io.ReadAll(io.LimitReader(f, maxPassword+1))
	} else {
		if src.CanPrompt {
			return "", cli.FlagErrorf("stdin is a terminal: pipe the password in (printf '%%s' \"$PW\" | siemctl …) or use --password-file")
		}
		if src.Stdin == nil {
			return "", errors.New("no stdin")
		}
		b, err = io.ReadAll(io.LimitReader(src.Stdin, maxPassword+1))
	}
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	if len(b) > maxPassword {
		return "", fmt.Errorf("password longer than %d bytes", maxPassword)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) == 0 {
		return "", errors.New("empty password")
	}
	return string(b), nil
}

func usersAPIFrom(f *cli.Factory) func(ctx context.Context) (secadmin.UsersAPI, error) {
	return func(ctx context.Context) (secadmin.UsersAPI, error) {
		c, err := f.Manager(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// renderInit renders a run of the security init tool: on failure its
// output lines on stderr and the error named after what; else the result as
// JSON with -o json, or the summary line.
func (o ToolOptions) renderInit(res secadmin.InitResult, err error, what, summary string) error {
	if res.Output == nil {
		res.Output = []string{}
	}
	if err != nil {
		for _, l := range res.Output {
			fmt.Fprintf(o.IO.ErrOut, "  | %s\n", l)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if o.Output == "json" {
		return output.JSON(o.IO.Out, res)
	}
	_, err = fmt.Fprintln(o.IO.Out, summary)
	return err
}
