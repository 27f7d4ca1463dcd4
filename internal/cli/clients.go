package cli

import (
	"context"
	"os"
	"sync"

	"github.com/siemctl/siemctl/internal/stack"
)

// lazyStack opens the stack once per process, on first use.
func lazyStack(f *Factory) func(ctx context.Context) (*stack.Stack, error) {
	var (
		once sync.Once
		s    *stack.Stack
		err  error
	)
	return func(ctx context.Context) (*stack.Stack, error) {
		once.Do(func() {
			cfg, cerr := f.Config()
			if cerr != nil {
				err = cerr
				return
			}
			s = stack.Open(ctx, cfg, stack.Options{Logger: f.Logger, LookupEnv: os.LookupEnv, Redactor: f.Redactor})
		})
		return s, err
	}
}
