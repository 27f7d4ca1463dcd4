package cli

import (
	"context"
	"errors"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/lock"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/cleanup"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/ops/rollout"
	"github.com/siemctl/siemctl/internal/ops/secadmin"
	"github.com/siemctl/siemctl/internal/ops/services"
	"github.com/siemctl/siemctl/internal/output"
)

// Exit codes, documented in `siemctl help exit-codes` and docs/exit-codes.md. This file is their
// one home: the domain's errors carry no numbers; ExitCode maps them (as restic's and gh's main
// do), and commands that end with a code of their own return an *ExitError with one of these.
const (
	ExitOK             = 0
	ExitFailure        = 1
	ExitUsage          = 2
	ExitNoGo           = 3
	ExitAuth           = 4
	ExitUnreachable    = 5
	ExitLocked         = 6
	ExitNotYourTurn    = 7 // a rolling upgrade's turn is another host's
	ExitStillStarting  = 8
	ExitRolledBack     = 10
	ExitRollbackFailed = 11
	ExitInterrupted    = 130
)

// Health's own codes are Nagios's: the verdict's status, OK 0, WARN 1, CRIT 2, UNKNOWN 3.
func HealthExitCode(s health.Status) int {
	switch s {
	case health.OK:
		return 0
	case health.Warn:
		return 1
	case health.Crit:
		return 2
	default:
		return 3
	}
}

// ExitCode maps an error to the process exit code. It is the only place that
// does so.
func ExitCode(err error) int {
	var (
		ee *ExitError
		fe *FlagError
	)
	if err == nil {
		return ExitOK
	}
	if errors.As(err, &ee) {
		return ee.Code
	}
	if code, ok := domainCode(err); ok {
		return code
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, netclient.ErrInterrupted):
		return ExitInterrupted
	case errors.As(err, &fe), errors.Is(err, config.ErrInvalid), errors.Is(err, output.ErrNoTTY):
		return ExitUsage
	case errors.Is(err, diagnose.ErrConfigMismatch):
		// a start whose component runs, where siemctl's configuration does not look
		return ExitUsage
	case errors.Is(err, services.ErrStillStarting):
		return ExitStillStarting
	case errors.Is(err, netclient.ErrUnauthorized), errors.Is(err, netclient.ErrForbidden), errors.Is(err, config.ErrSecret),
		errors.Is(err, diagnose.ErrAccessDenied):
		// diagnose.ErrAccessDenied: a start that failed on a file its service user cannot read or write
		return ExitAuth
	case errors.Is(err, netclient.ErrUnreachable), errors.Is(err, netclient.ErrTimeout), errors.Is(err, netclient.ErrTLS),
		errors.Is(err, netclient.ErrNotReady), errors.Is(err, netclient.ErrRateLimited):
		return ExitUnreachable
	default:
		return ExitFailure
	}
}

// domainCode is the code of the first error in err's tree (depth first, as errors.As walks it)
// that is one of the domain's outcomes: a run's no-go, failure, rollback or stop, a held lock,
// another host's turn, a refusal that changed nothing.
func domainCode(err error) (int, bool) {
	switch err.(type) {
	case *engine.GateError, *cleanup.RefusedError, *secadmin.RemovedError, *secadmin.BackupFailedError:
		return ExitNoGo, true // nothing was changed
	case *engine.PlanError:
		return ExitUsage, true // a broken runbook or selection
	case *engine.FailedError, *engine.FinallyError:
		return ExitFailure, true
	case *engine.RolledBackError, *rollout.RollingBackError:
		return ExitRolledBack, true
	case *engine.RollbackFailedError:
		return ExitRollbackFailed, true
	case *engine.StoppedError:
		return ExitInterrupted, true // stopped by the operator, resumable
	case *lock.HeldError:
		return ExitLocked, true
	case *rollout.NotYourTurnError:
		return ExitNotYourTurn, true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return domainCode(next)
		}
	case interface{ Unwrap() []error }:
		for _, next := range u.Unwrap() {
			if code, ok := domainCode(next); ok {
				return code, true
			}
		}
	}
	return 0, false
}

// unreachableHint is the hint of an unreachable or silent service.
const unreachableHint = "is the service running? try `siemctl services status` and `siemctl health`"

// hints are the next thing to try for an error: the first entry whose err
// the error matches (errors.Is) and whose service ("" any) named the client
// that failed (netclient.Error's Service) wins; an empty hint says nothing.
var hints = []struct {
	err     error
	service string
	hint    string
}{
	{context.Canceled, "", ""},
	{netclient.ErrInterrupted, "", ""},
	{config.ErrInvalid, "", "see `siemctl help config` for every key and its default"},
	{config.ErrSecret, "", "siemctl reads passwords from password_file, password_env or password_command; never from flags"},
	{netclient.ErrTLS, "", "set the component's ca_file to the CA that signed its certificate (insecure: true is an explicit, reported opt-out)"},
	{netclient.ErrUnauthorized, "", "check the username and the password source in the config"},
	{netclient.ErrForbidden, "manager API", "the API user is authenticated but its RBAC roles do not allow this call: give manager.username a role with the needed policy (the error's remediation says which), or use a user that has it"},
	{netclient.ErrForbidden, "indexer", "the indexer user is authenticated but not allowed this call: map indexer.username to a role with the needed cluster/index permissions (roles_mapping.yml), or use the admin user"},
	{netclient.ErrForbidden, "", "the user is authenticated but not allowed this call: check its roles"},
	{netclient.ErrTooLarge, "", "an answer was larger than siemctl reads; the message names it: narrow the request (filters, --page-size) or look at what makes the service answer so much"},
	{netclient.ErrUnreachable, "", unreachableHint},
	{netclient.ErrTimeout, "", unreachableHint},
	{netclient.ErrRateLimited, "indexer", "the indexer is rejecting requests (HTTP 429: a full thread pool queue or a circuit breaker); look at its heap and GET _cat/thread_pool, wait and retry"},
	{netclient.ErrRateLimited, "", "the manager API allows access.max_request_per_minute (300 by default) for all clients together; wait a minute and retry, or use a longer --timeout"},
	{output.ErrNoTTY, "", "re-run with --yes in scripts (or --dry-run to see what it would do)"},
	{lock.ErrHeld, "", "nothing was changed; wait for that run to end (`siemctl upgrade status`) and try again"},
	{rollout.ErrNotYourTurn, "", "nothing was changed; `siemctl upgrade status --cluster` shows the order and every turn's state; run `siemctl upgrade node` again when this host's turn comes, or with --wait DURATION to wait for it"},
}

// hint returns the next thing to try for an error, or "". A start that
// failed with its diagnosis has none: its fix is in the error, and a 401 in
// it is the component's credentials (the shipper's output), not siemctl's.
func hint(err error) string {
	var de *services.DiagnosedError
	if errors.As(err, &de) {
		return ""
	}
	var ne *netclient.Error
	service := ""
	if errors.As(err, &ne) {
		service = ne.Service
	}
	for _, h := range hints {
		if errors.Is(err, h.err) && (h.service == "" || h.service == service) {
			return h.hint
		}
	}
	return ""
}
