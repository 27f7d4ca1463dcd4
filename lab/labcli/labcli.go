// Package labcli is the siemlab command line: up, down, status, fault, heal, filebeat (and the hidden emu
// dispatcher). lab/cmd/siemlab wires the emulators into it.
package labcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/lab"
)

// Deps are what the CLI needs from outside the lab package.
type Deps struct {
	Emulators lab.Emulators // nil: indexer-only labs
	// EmuMain runs an emulator program (siemlab emu NAME args...); nil disables the sub-command.
	EmuMain func(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// Main runs siemlab with args (without the program name) and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, deps Deps) int {
	root := NewRoot(stdin, stdout, stderr, deps)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintln(stderr, "siemlab:", err)
		if errors.Is(err, lab.ErrUnknownFault) || errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

var errUsage = errors.New("usage")

// needDir is the check of every command's required --dir.
func needDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("%w: --dir is required", errUsage)
	}
	return nil
}

// opener opens the lab a command's --dir names.
type opener func(dir string) (*lab.Lab, error)

// run is a RunE that opens the lab at *dir (read when the command runs) and calls f with it.
func (open opener) run(dir *string, f func(cmd *cobra.Command, l *lab.Lab) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		l, err := open(*dir)
		if err != nil {
			return err
		}
		return f(cmd, l)
	}
}

// writeJSON writes v as indented JSON (the --json output of every command).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseSize reads a byte size: a whole number with an optional unit B, KiB, MiB, GiB, TiB (powers
// of 1024) or KB, MB, GB, TB (powers of 1000); case does not matter.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]int64{"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q (want B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", t[i:])
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive whole number with a unit, e.g. 500MiB or 2GiB")
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("too large")
	}
	return n * mult, nil
}

type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// NewRoot builds the command tree.
func NewRoot(stdin io.Reader, stdout, stderr io.Writer, deps Deps) *cobra.Command {
	var logLevel string
	root := &cobra.Command{
		Use:           "siemlab",
		Short:         "A real single-host SIEM stack (OpenSearch, private systemd, apt/dpkg) for siemctl's tests and demo",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&logLevel, "log-level", "warn", "log level (debug, info, warn, error)")
	logger := func() *slog.Logger {
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
			lvl = slog.LevelWarn
		}
		return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	}
	open := opener(func(dir string) (*lab.Lab, error) {
		if err := needDir(dir); err != nil {
			return nil, err
		}
		return lab.OpenWith(dir, logger(), deps.Emulators)
	})

	openDist := func(dir string) (*lab.Distributed, error) {
		if err := needDir(dir); err != nil {
			return nil, err
		}
		return lab.OpenDistributed(dir, logger(), deps.Emulators)
	}
	var dir, version, profile, heap, topology string
	var offset int
	var syslog bool
	up := &cobra.Command{
		Use:   "up --dir DIR [--topology single|distributed] [--profile siem|wazuh] [--version 4.9.0] [--port-offset N] [--syslog]",
		Short: "Build the packages, install them in DIR/root, start the stack and wait until it is healthy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needDir(dir); err != nil {
				return err
			}
			if _, err := lab.ProfileFor(profile); err != nil {
				return fmt.Errorf("%w: --profile: %v", errUsage, err)
			}
			opts := lab.Options{Dir: dir, Version: version, Profile: profile, Syslog: syslog, PortOffset: offset, IndexerHeap: heap,
				Logger: logger(), Progress: stderr, Emulators: deps.Emulators}
			switch topology {
			case lab.TopologySingle:
			case lab.TopologyDistributed:
				d, err := lab.UpDistributed(cmd.Context(), opts)
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, filepath.Join(d.Dir(), "inventory.ini"))
				return nil
			default:
				return fmt.Errorf("%w: --topology %q: want single or distributed", errUsage, topology)
			}
			l, err := lab.Up(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, l.ConfigPath())
			return nil
		},
	}
	up.Flags().StringVar(&dir, "dir", "", "lab directory")
	up.Flags().StringVar(&version, "version", lab.Versions[0], "package version to install: real Wazuh releases 4.12.0 (OpenSearch 2.19.1), 4.14.1 (2.19.3), 4.14.4 (2.19.4), built together; or the lab's own builds 4.9.0 (2.11.1) and 4.10.0 (2.19.3), not those Wazuh releases (the cross-codec pair)")
	up.Flags().IntVar(&offset, "port-offset", 0, "added to every default port")
	up.Flags().StringVar(&topology, "topology", lab.TopologySingle, "single (one host) or distributed (3 indexer nodes, a manager master and worker, a dashboard: each its own host under DIR/hosts)")
	up.Flags().StringVar(&heap, "indexer-heap", "512m", "OpenSearch heap (-Xms/-Xmx); thousands of indices (siemlab load) need 1g-2g")
	up.Flags().StringVar(&profile, "profile", lab.DefaultProfile, "layout: siem (siem-* packages and units, siemctl's reference layout) or wazuh (a stock Wazuh 4.x host)")
	up.Flags().BoolVar(&syslog, "syslog", false, "add a syslog listener (udp 514+offset) to a manager whose stock ossec.conf has none (wazuh)")

	down := &cobra.Command{
		Use:   "down --dir DIR",
		Short: "Stop every lab process, remove its cgroups (idempotent; files under DIR stay)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needDir(dir); err != nil {
				return err
			}
			t0 := time.Now()
			if err := lab.DownDir(cmd.Context(), dir); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "siemlab down: %s (%.2fs)\n", dir, time.Since(t0).Seconds())
			return nil
		},
	}
	down.Flags().StringVar(&dir, "dir", "", "lab directory")

	var asJSON bool
	status := &cobra.Command{
		Use:   "status --dir DIR [--json]",
		Short: "Units, PIDs, ports, installed versions, cluster health, memory",
		Args:  cobra.NoArgs,
		RunE: open.run(&dir, func(cmd *cobra.Command, l *lab.Lab) error {
			show := func(st fmt.Stringer, err error) error {
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(stdout, st)
				}
				_, err = io.WriteString(stdout, st.String())
				return err
			}
			if lab.IsDistributed(dir) {
				d, err := openDist(dir)
				if err != nil {
					return err
				}
				return show(d.Status(cmd.Context()))
			}
			return show(l.Status(cmd.Context()))
		}),
	}
	status.Flags().StringVar(&dir, "dir", "", "lab directory")
	status.Flags().BoolVar(&asJSON, "json", false, "JSON output")

	var list bool
	faultCmd := func(name, short string, heal bool) *cobra.Command {
		c := &cobra.Command{
			Use:   name + " --dir DIR KIND | --list",
			Short: short,
			RunE: func(cmd *cobra.Command, args []string) error {
				if list {
					for _, k := range lab.FaultKinds() {
						fmt.Fprintf(stdout, "%-24s %s\n", k.Name, k.Description)
					}
					fmt.Fprintln(stdout, "\ndistributed labs (--topology distributed):")
					for _, k := range lab.DistFaultKinds() {
						fmt.Fprintf(stdout, "%-24s %s\n", k.Name, k.Description)
					}
					return nil
				}
				if len(args) != 1 {
					return fmt.Errorf("%w: exactly one fault KIND (siemlab %s --list)", errUsage, name)
				}
				// a single lab and a distributed one take faults alike
				var target interface {
					Fault(ctx context.Context, kind string) error
					Heal(ctx context.Context, kind string) error
				}
				var err error
				if lab.IsDistributed(dir) {
					target, err = openDist(dir)
				} else {
					target, err = open(dir)
				}
				if err != nil {
					return err
				}
				t0 := time.Now()
				if heal {
					err = target.Heal(cmd.Context(), args[0])
				} else {
					err = target.Fault(cmd.Context(), args[0])
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(stderr, "siemlab %s %s: done (%.1fs)\n", name, args[0], time.Since(t0).Seconds())
				return nil
			},
		}
		c.Flags().StringVar(&dir, "dir", "", "lab directory")
		c.Flags().BoolVar(&list, "list", false, "list the fault kinds")
		return c
	}
	filebeat := &cobra.Command{
		Use:   "filebeat",
		Short: "Build Filebeat OSS " + lab.FilebeatVersion + " from the Go module proxy into the lab cache (once) and print its path",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cacheDir, err := lab.DefaultCacheDir()
			if err != nil {
				return err
			}
			t0 := time.Now()
			c := &lab.FilebeatCache{Dir: cacheDir, Logger: logger(), Progress: stderr}
			path, built, err := c.Ensure(cmd.Context())
			if err != nil {
				return err
			}
			how := "cached"
			if built {
				how = "built"
			}
			fmt.Fprintf(stderr, "siemlab filebeat: %s %s (%.1fs)\n", how, path, time.Since(t0).Seconds())
			fmt.Fprintln(stdout, path)
			return nil
		},
	}
	var days int
	var size string
	var seed uint64
	load := &cobra.Command{
		Use:   "load --dir DIR [--days 30] [--size 100MiB] [--json]",
		Short: "Fill the lab's indexer with realistic alert documents over daily indices (bulk)",
		Long: `Fill the lab's indexer with realistic alert documents over --days daily indices ending
yesterday (today's index stays the live one), --size bytes of document JSON in all, in bulk
requests. Raises cluster.max_shards_per_node when the new indices need it (as an administrator
with long retention does) and says so. The indices are created ahead of the bulk requests with the
mapping of the first one; creating an index (a cluster state change, 0.2-0.6 s on 2 busy cores)
dominates: 1 GiB over 1,000 indices took 11 min here. A thousand indices need a heap above the
default 512m (siemlab up --indexer-heap 2g).`,
		Example: "  siemlab load --dir /tmp/lab --days 1000 --size 1GiB",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := parseSize(size)
			if err != nil {
				return fmt.Errorf("%w: --size %q: %v", errUsage, size, err)
			}
			if days < 1 || days > 20000 {
				return fmt.Errorf("%w: --days %d: want 1 to 20000", errUsage, days)
			}
			l, err := loadTarget(dir, open, openDist)
			if err != nil {
				return err
			}
			rep, err := l.Load(cmd.Context(), lab.LoadOptions{Days: days, Bytes: n, Seed: seed, Progress: stderr})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(stdout, rep)
			}
			fmt.Fprintf(stdout, "loaded %d documents (%.1f MiB of JSON, %.1f MiB on disk) into %d indices %s … %s in %.1fs (%.1f MiB/s)\n",
				rep.Docs, float64(rep.SourceBytes)/(1<<20), float64(rep.StoreBytes)/(1<<20), rep.Indices, rep.First, rep.Last,
				rep.Took.Seconds(), float64(rep.SourceBytes)/(1<<20)/rep.Took.Seconds())
			if rep.ShardLimit != 0 {
				fmt.Fprintf(stdout, "raised cluster.max_shards_per_node from %d to %d (%d shards per index)\n", rep.ShardLimitWas, rep.ShardLimit, rep.ShardsPerIdx)
			}
			return nil
		},
	}
	load.Flags().StringVar(&dir, "dir", "", "lab directory")
	load.Flags().IntVar(&days, "days", 30, "daily indices to fill, the newest yesterday")
	load.Flags().StringVar(&size, "size", "100MiB", "document JSON in all (B, KiB, MiB, GiB; KB, MB, GB)")
	load.Flags().Uint64Var(&seed, "seed", 1, "the same seed gives the same documents")
	load.Flags().BoolVar(&asJSON, "json", false, "JSON report")

	root.AddCommand(up, down, status, load, flowCmd(stdout, stderr, open, openDist), benchCmd(stdout), filebeat, faultCmd("fault", "Inject a fault into the running lab", false), faultCmd("heal", "Remove a fault and wait until the stack is healthy", true))
	if deps.EmuMain != nil {
		root.AddCommand(&cobra.Command{
			Use:                "emu NAME [ARGS...]",
			Short:              "Run an emulator program (as if called by its name)",
			Hidden:             true,
			DisableFlagParsing: true,
			Args:               cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if code := deps.EmuMain(cmd.Context(), args[0], args[1:], stdin, stdout, stderr); code != 0 {
					return &exitError{code: code}
				}
				return nil
			},
		})
	}
	return root
}

// loadTarget is the lab whose indexer `siemlab load` fills: the lab itself, or for a distributed
// lab its first indexer host (the documents go to the indexer cluster, which every node serves).
func loadTarget(dir string, open func(string) (*lab.Lab, error), openDist func(string) (*lab.Distributed, error)) (*lab.Lab, error) {
	if !lab.IsDistributed(dir) {
		return open(dir)
	}
	d, err := openDist(dir)
	if err != nil {
		return nil, err
	}
	hosts := d.HostsOf(lab.RoleIndexer)
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s: the distributed lab has no indexer host", dir)
	}
	return hosts[0], nil
}
