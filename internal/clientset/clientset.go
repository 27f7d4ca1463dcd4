// Package clientset holds Client, a client or the reason it is missing:
// the one shape in which the client set (internal/cli's Clients) and its
// consumers (the health checks' Stack, the step kinds' Deps, the live
// snapshot source) carry the indexer, manager, package-manager, shipper and
// systemd clients. A consumer narrows a client to the interface it uses
// (As) and asks it for the client or the reason in one call (Get).
package clientset

import (
	"errors"
	"fmt"
	"reflect"
)

// ErrNotConfigured is the reason of a Client that was never given one (the
// zero Client).
var ErrNotConfigured = errors.New("not configured")

// Client is a client of type T, or the reason it could not be built (e.g.
// the password file is missing). The zero Client is missing, for
// ErrNotConfigured.
type Client[T any] struct {
	c   T
	err error
	ok  bool
}

// Of is the client c, present (c is a built client, never a nil one).
func Of[T any](c T) Client[T] { return Client[T]{c: c, ok: true} }

// Missing is a missing client and why (nil err: ErrNotConfigured).
func Missing[T any](err error) Client[T] { return Client[T]{err: err} }

// New is a constructor's result: c, or missing for err.
func New[T any](c T, err error) Client[T] {
	if err != nil {
		return Missing[T](err)
	}
	return Of(c)
}

// Get returns the client, or the zero T and the reason it is missing.
func (c Client[T]) Get() (T, error) {
	if !c.ok {
		var zero T
		return zero, c.Err()
	}
	return c.c, nil
}

// Need returns the client, or an error naming what is missing and why
// ("indexer: <reason>").
func (c Client[T]) Need(what string) (T, error) {
	cl, err := c.Get()
	if err != nil {
		return cl, fmt.Errorf("%s: %w", what, err)
	}
	return cl, nil
}

// OK reports whether the client is present.
func (c Client[T]) OK() bool { return c.ok }

// Err is the reason the client is missing (nil when it is present).
func (c Client[T]) Err() error {
	switch {
	case c.ok:
		return nil
	case c.err == nil:
		return ErrNotConfigured
	}
	return c.err
}

// As narrows c to the interface U a consumer uses: a missing client stays
// missing for the same reason. A present client whose type does not
// implement U is missing for that (a programming error the callers' tests
// catch; they also assert the implementation at compile time).
func As[U, T any](c Client[T]) Client[U] {
	if !c.ok {
		return Client[U]{err: c.err}
	}
	u, ok := any(c.c).(U)
	if !ok {
		return Missing[U](fmt.Errorf("%T does not implement %v", c.c, reflect.TypeFor[U]()))
	}
	return Of(u)
}
