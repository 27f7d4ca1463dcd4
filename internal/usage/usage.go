// Package usage holds the usage error: a request refused before anything ran
// (a flag combination, an argument, a phase asked of the wrong host). It is
// its own small package so that a library the commands call (the roll) can
// refuse a request as the commands do without importing internal/cli, which
// names it FlagError and maps it to exit 2.
package usage

import "fmt"

// Error is a usage problem: bad flag combination or argument. Exit 2.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error.
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}
