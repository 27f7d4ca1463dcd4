package services

import (
	"context"
	"errors"
	"fmt"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Probes say whether each component's service answers, by component name:
// "start means ready" (the indexer's HTTP answers, the manager API's
// daemons are ready, the dashboard's GET / answers, the shipper's `test
// config` passes). Runner.Ready is their Ready; factory.Clients.Ready builds
// them from the client set, the one place they are assembled.
type Probes map[string]func(ctx context.Context) error

// Ready asks c's probe; a component without one is ready once active.
func (p Probes) Ready(ctx context.Context, c Component) error {
	if f := p[c.Name]; f != nil {
		return f(ctx)
	}
	return nil
}

// Answers turns an HTTP client's error into readiness: any answer but
// "unreachable", "timed out" and 503 means the service is up (a 401 is an
// answer: the health checks judge it). A TLS refusal is passed on: the
// runner asks the diagnosis whether the certificate is the component's
// fault (its clients refuse it too) or only siemctl's trust.
func Answers(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, netclient.ErrUnreachable) || errors.Is(err, netclient.ErrTimeout) || errors.Is(err, netclient.ErrNotReady) ||
		errors.Is(err, netclient.ErrTLS) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// StatusReady is ready for an HTTP status below 500 (the dashboard's 503
// "server is not ready yet" is not).
func StatusReady(code int, err error) error {
	if err != nil {
		return err
	}
	if code >= 500 {
		return fmt.Errorf("GET / answered %d", code)
	}
	return nil
}
