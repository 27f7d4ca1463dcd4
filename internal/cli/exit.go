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
	case errors.Is(err, context.Canceled), errors.Is(err, netclient.ErrInterrupted):
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
	var ne *netclient.Error
	service := ""
	if errors.As(err, &ne) {
		service = ne.Service
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, netclient.ErrInterrupted):
		return ""
	case errors.Is(err, config.ErrInvalid):
		return "see `siemctl help config` for every key and its default"
	case errors.Is(err, config.ErrSecret):
		return "siemctl reads passwords from password_file, password_env or password_command; never from flags"
	case errors.Is(err, netclient.ErrTLS):
		return "set the component's ca_file to the CA that signed its certificate (insecure: true is an explicit, reported opt-out)"
	case errors.Is(err, netclient.ErrUnauthorized):
		return "check the username and the password source in the config"
	case errors.Is(err, netclient.ErrForbidden) && service == "manager API":
		return "the API user is authenticated but its RBAC roles do not allow this call: give manager.username a role with the needed policy (the error's remediation says which), or use a user that has it"
	case errors.Is(err, netclient.ErrForbidden) && service == "indexer":
		return "the indexer user is authenticated but not allowed this call: map indexer.username to a role with the needed cluster/index permissions (roles_mapping.yml), or use the admin user"
	case errors.Is(err, netclient.ErrForbidden):
		return "the user is authenticated but not allowed this call: check its roles"
	case errors.Is(err, netclient.ErrTooLarge):
		return "an answer was larger than siemctl reads; the message names it: narrow the request (filters, --page-size) or look at what makes the service answer so much"
	case errors.Is(err, netclient.ErrUnreachable), errors.Is(err, netclient.ErrTimeout):
		return "is the service running? try `siemctl services status` and `siemctl health`"
	case errors.Is(err, netclient.ErrRateLimited) && service == "indexer":
		return "the indexer is rejecting requests (HTTP 429: a full thread pool queue or a circuit breaker); look at its heap and GET _cat/thread_pool, wait and retry"
	case errors.Is(err, netclient.ErrRateLimited):
		return "the manager API allows access.max_request_per_minute (300 by default) for all clients together; wait a minute and retry, or use a longer --timeout"
	case errors.Is(err, output.ErrNoTTY):
		return "re-run with --yes in scripts (or --dry-run to see what it would do)"
	case errors.Is(err, lock.ErrHeld):
		return "nothing was changed; wait for that run to end (`siemctl upgrade status`) and try again"
	}
	return ""
}
