package steps

import (
	"context"

	"github.com/siemctl/siemctl/internal/ops/hostfacts"
)

// SetPortHolders replaces who gate.ports finds on the host's ports; restore puts /proc back.
func SetPortHolders(f func(ctx context.Context, ports []int) (map[int]hostfacts.Holder, error)) (restore func()) {
	old := portHolders
	portHolders = f
	return func() { portHolders = old }
}
