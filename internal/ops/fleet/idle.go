package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// IdleContext ends when touch is not called for d: a listing of 100,000
// agents may take longer than --timeout, but no page may. Its Deadline moves
// with each touch, so the manager client knows how long a rate-limit wait
// may be; when it expires its Err is context.DeadlineExceeded (a timeout,
// exit 5), and context.Canceled only when the parent was cancelled (Ctrl-C,
// exit 130).
type IdleContext struct {
	parent context.Context
	d      time.Duration
	done   chan struct{}
	timer  *time.Timer

	mu       sync.Mutex
	deadline time.Time
	err      error
	expired  bool
}

// IdleDeadline returns ctx bounded by an idle timeout of d (none if d <= 0),
// the touch that restarts it, and stop, which releases it.
func IdleDeadline(ctx context.Context, d time.Duration) (*IdleContext, func(), func()) {
	c := &IdleContext{parent: ctx, d: d, done: make(chan struct{})}
	stopParent := context.AfterFunc(ctx, func() { c.end(ctx.Err(), false) })
	if d <= 0 {
		return c, func() {}, func() { stopParent(); c.end(context.Canceled, false) }
	}
	c.deadline = time.Now().Add(d)
	c.timer = time.AfterFunc(d, func() { c.end(context.DeadlineExceeded, true) })
	touch := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err == nil {
			c.deadline = time.Now().Add(d)
			c.timer.Reset(d)
		}
	}
	return c, touch, func() { c.timer.Stop(); stopParent(); c.end(context.Canceled, false) }
}

func (c *IdleContext) end(err error, expired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err, c.expired = err, expired
		close(c.done)
	}
}

// Deadline is the idle deadline (or the parent's, if earlier).
func (c *IdleContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	dl, ok := c.deadline, !c.deadline.IsZero()
	c.mu.Unlock()
	if pd, pok := c.parent.Deadline(); pok && (!ok || pd.Before(dl)) {
		return pd, true
	}
	return dl, ok
}

// Done is closed when the context ends.
func (c *IdleContext) Done() <-chan struct{} { return c.done }

// Err says why the context ended.
func (c *IdleContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value is the parent's.
func (c *IdleContext) Value(key any) any { return c.parent.Value(key) }

// Explain names the idle timeout in a timeout error it caused; any other
// error (rate limited, refused, interrupted) is left as it is.
func (c *IdleContext) Explain(err error) error {
	c.mu.Lock()
	expired := c.expired
	c.mu.Unlock()
	if err != nil && expired && errors.Is(err, netclient.ErrTimeout) {
		return fmt.Errorf("no answer from the manager for %s (--timeout): %w", c.d, err)
	}
	return err
}
