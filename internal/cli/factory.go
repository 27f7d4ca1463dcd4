package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/redact"
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
// clients themselves; tests replace these funcs.
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
	// Clients returns the client set built from the config (lazily, once).
	// Commands take the narrow pieces (f.Indexer, f.Manager, f.Units...).
	Clients func(ctx context.Context) (*Clients, error)
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
	f.Clients = lazyClients(f)
	f.HostLock = f.hostLock
	return f
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
