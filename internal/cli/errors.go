package cli

import (
	"errors"
	"fmt"

	"github.com/siemctl/siemctl/internal/usage"
)

// FlagError is a usage problem: bad flag combination or argument. Exit 2.
// It is usage.Error, so a library the commands call (the roll) refuses a
// request the same way without importing this package.
type FlagError = usage.Error

// FlagErrorf builds a FlagError.
func FlagErrorf(format string, args ...any) error {
	return usage.Errorf(format, args...)
}

// ErrSilent means the command already reported the failure; exit 1.
var ErrSilent = errors.New("silent error")

// ExitError carries a specific exit code (one of exit.go's): after the command
// has printed its result (health's Nagios codes, a diff that found something
// critical; silent when it has neither Reason nor Err), or around an error the
// command gives its own code (Err, printed and unwrapped).
type ExitError struct {
	Code   int
	Reason string
	Err    error
}

func (e *ExitError) Error() string {
	switch {
	case e.Reason != "":
		return e.Reason
	case e.Err != nil:
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func (e *ExitError) Unwrap() error { return e.Err }
