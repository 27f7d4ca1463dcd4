package cli

import (
	"context"
	"errors"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/output"
)

// Exit codes. Documented in `siemctl help exit-codes` and the README.
const (
	ExitOK             = 0
	ExitFailure        = 1
	ExitUsage          = 2
	ExitNoGo           = 3
	ExitAuth           = 4
	ExitUnreachable    = 5
	ExitLocked         = 6
	ExitRolledBack     = 10
	ExitRollbackFailed = 11
	ExitInterrupted    = 130
)

// exitCoder is implemented by domain errors that carry their own exit code
// (engine gate/rollback errors, lock conflicts); it is consulted only here.
type exitCoder interface{ ExitCode() int }

// ExitCode maps an error to the process exit code. It is the only place that
// does so.
func ExitCode(err error) int {
	var (
		ee *ExitError
		fe *FlagError
		ec exitCoder
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &fe), errors.Is(err, config.ErrInvalid), errors.Is(err, output.ErrNoTTY):
		return ExitUsage
	case errors.Is(err, netclient.ErrUnauthorized), errors.Is(err, netclient.ErrForbidden), errors.Is(err, config.ErrSecret):
		return ExitAuth
	case errors.Is(err, netclient.ErrUnreachable), errors.Is(err, netclient.ErrTimeout), errors.Is(err, netclient.ErrTLS),
		errors.Is(err, netclient.ErrNotReady), errors.Is(err, netclient.ErrRateLimited):
		return ExitUnreachable
	default:
		return ExitFailure
	}
}

// hint returns the next thing to try for an error, or "".
func hint(err error) string {
	switch {
	case errors.Is(err, config.ErrInvalid):
		return "see `siemctl help config` for every key and its default"
	case errors.Is(err, config.ErrSecret):
		return "siemctl reads passwords from password_file, password_env or password_command; never from flags"
	case errors.Is(err, netclient.ErrTLS):
		return "set the component's ca_file to the CA that signed its certificate (insecure: true is an explicit, reported opt-out)"
	case errors.Is(err, netclient.ErrUnauthorized):
		return "check the username and the password source in the config"
	case errors.Is(err, netclient.ErrUnreachable), errors.Is(err, netclient.ErrTimeout):
		return "is the service running? try `siemctl services status` and `siemctl health`"
	case errors.Is(err, netclient.ErrRateLimited):
		return "the manager API allows 300 requests per minute for everybody; wait a minute and retry"
	case errors.Is(err, output.ErrNoTTY):
		return "re-run with --yes in scripts (or --dry-run to see what it would do)"
	case errors.Is(err, lock.ErrHeld):
		return "nothing was changed; wait for that run to end (`siemctl upgrade status`) and try again"
	}
	return ""
}
