package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/manager"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/redact"
	"github.com/siemctl/siemctl/internal/units"
)

// GlobalOptions are the persistent flags every command shares.
type GlobalOptions struct {
	ConfigPath string
	Profile    string
	Output     string
	Timeout    time.Duration
	NoColor    bool
	LogLevel   string
	LogFormat  string
	Yes        bool
}

// Factory hands commands their dependencies, lazily. Commands never build
// clients themselves: internal/factory wires the client funcs (gh's
// pkg/cmd/factory), cmd/siemctl hands its Wire to Main; tests replace these
// funcs. Unwired, every client func returns ErrNoClients.
type Factory struct {
	IO     *output.IOStreams
	Logger *slog.Logger
	Now    func() time.Time
	Env    []string
	Global *GlobalOptions
	// Redactor is the one boundary where text leaves siemctl: stdout,
	// stderr and the logger write through it, and the stack registers the
	// secrets it resolves.
	Redactor *redact.Redactor

	Config func() (*config.Config, error)

	// The clients, built once from Config on first use (a client that
	// could not be built returns the reason): commands take these narrow
	// pieces.
	Indexer      func(ctx context.Context) (*indexer.Client, error)
	Manager      func(ctx context.Context) (*manager.Client, error)
	ManagerTools func(ctx context.Context) (manager.Tools, error)
	Units        func(ctx context.Context) (*units.Manager, error)
	// Clients returns the whole client set, opaque here: the few consumers
	// of what is assembled from it (the step kinds' dependencies, the
	// health checks' inputs, the live snapshot source, readiness, the
	// versions) narrow it to the interface they declare (ClientsAs,
	// FromClients).
	Clients func(ctx context.Context) (ClientSet, error)
	// HostLock takes the host lock for command (the line recorded as its
	// holder); every command that changes the stack takes it through Change.
	HostLock func(ctx context.Context, command string) (release func(), err error)
}

// NewFactory returns the production factory. It routes io's Out and ErrOut
// through the factory's Redactor (in place).
func NewFactory(io *output.IOStreams, env []string) *Factory {
	r := redact.New()
	io.Out, io.ErrOut = r.Writer(io.Out), r.Writer(io.ErrOut)
	f := &Factory{IO: io, Now: time.Now, Env: env, Redactor: r, Global: &GlobalOptions{Output: "table", Timeout: 10 * time.Second, LogLevel: "warn", LogFormat: "text"}}
	f.Logger = slog.New(slog.NewTextHandler(io.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var (
		once sync.Once
		cfg  *config.Config
		err  error
	)
	f.Config = func() (*config.Config, error) {
		once.Do(func() {
			cfg, err = config.Load(config.LoadOptions{
				Path:         f.Global.ConfigPath,
				ExplicitPath: f.Global.ConfigPath != "",
				Profile:      f.Global.Profile,
				Env:          env,
				LookupEnv:    os.LookupEnv,
			})
			if err == nil {
				for _, w := range cfg.Warnings {
					fmt.Fprintf(f.IO.ErrOut, "%s %s\n", f.IO.ErrColors().Yellow("warning:"), w)
				}
			}
		})
		return cfg, err
	}
	f.Indexer = func(context.Context) (*indexer.Client, error) { return nil, ErrNoClients }
	f.Manager = func(context.Context) (*manager.Client, error) { return nil, ErrNoClients }
	f.ManagerTools = func(context.Context) (manager.Tools, error) { return manager.Tools{}, ErrNoClients }
	f.Units = func(context.Context) (*units.Manager, error) { return nil, ErrNoClients }
	f.Clients = func(context.Context) (ClientSet, error) { return nil, ErrNoClients }
	f.HostLock = f.hostLock
	return f
}

// ClientSet is the client set internal/factory builds; Close releases its
// connections.
type ClientSet interface {
	Close() error
}

// ErrNoClients is what an unwired Factory's clients return.
var ErrNoClients = errors.New("no clients: the factory is not wired to the stack (internal/factory.Wire)")

// ClientsAs returns f's client set narrowed to I, the interface its
// consumer declares.
func ClientsAs[I any](ctx context.Context, f *Factory) (I, error) {
	var zero I
	s, err := f.Clients(ctx)
	if err != nil {
		return zero, err
	}
	i, ok := s.(I)
	if !ok {
		return zero, fmt.Errorf("the client set %T has no %s", s, reflect.TypeFor[I]())
	}
	return i, nil
}

// FromClients is the lazy func of what get takes from f's client set
// narrowed to I, e.g. FromClients(f, health.Source.Health).
func FromClients[I, T any](f *Factory, get func(I) T) func(ctx context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		s, err := ClientsAs[I](ctx, f)
		if err != nil {
			var zero T
			return zero, err
		}
		return get(s), nil
	}
}

// configureLogger applies --log-level/--log-format.
func (f *Factory) configureLogger() error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.Global.LogLevel)); err != nil {
		return FlagErrorf("--log-level %q: use debug, info, warn or error", f.Global.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch f.Global.LogFormat {
	case "text":
		f.Logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, opts))
	case "json":
		f.Logger = slog.New(slog.NewJSONHandler(f.IO.ErrOut, opts))
	default:
		return FlagErrorf("--log-format %q: use text or json", f.Global.LogFormat)
	}
	return nil
}
