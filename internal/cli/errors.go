package cli

import (
	"errors"
	"fmt"
)

// FlagError is a usage problem: bad flag combination or argument. Exit 2.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf builds a FlagError.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// ErrSilent means the command already reported the failure; exit 1.
var ErrSilent = errors.New("silent error")

// ExitError carries a specific exit code after the command has printed its
// result, e.g. health's Nagios codes or a diff that found something critical.
type ExitError struct {
	Code   int
	Reason string
}

func (e *ExitError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	return fmt.Sprintf("exit status %d", e.Code)
}
