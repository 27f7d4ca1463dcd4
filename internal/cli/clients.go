package cli

import (
	"context"
	"sync"
)

// Clients are the stack's clients built from the config. Fields are filled as
// the client packages are wired in.
type Clients struct{}

func lazyClients(f *Factory) func(ctx context.Context) (*Clients, error) {
	var (
		once sync.Once
		c    *Clients
		err  error
	)
	return func(ctx context.Context) (*Clients, error) {
		once.Do(func() {
			if _, err = f.Config(); err != nil {
				return
			}
			c = &Clients{}
		})
		return c, err
	}
}
