// Package lab brings up a real single-host SIEM stack for siemctl's end-to-end tests and demo.
//
// A lab lives in one directory DIR:
//
//	DIR/root          isolated dpkg/apt root (DPKG_ROOT); every component's files are under it
//	DIR/repo          flat apt repository with siem-indexer, siem-manager, siem-dashboard and shipper
//	                  in versions 4.9.0-1 and 4.10.0-1 (dpkg-scanpackages --multiversion)
//	DIR/dist          hard-link farms of the prepared OpenSearch homes (2.11.1, 2.19.3) that the
//	                  siem-indexer packages' home links into (lib, modules, plugins, bin/*)
//	DIR/certs         the lab PKI (root CA, node, admin, dashboard, manager API; PKCS#8 keys)
//	DIR/secrets       indexer and manager passwords (0600), as siemctl reads them
//	DIR/rt            XDG_RUNTIME_DIR of the private systemd (rt/systemd/private is its D-Bus socket)
//	DIR/tpl/<v>/      the alerts template of each manager version
//	DIR/siemctl.yaml  siemctl config for this lab;  DIR/env  shell exports (SIEMCTL_CONFIG, APT_CONFIG, DPKG_ROOT)
//	DIR/lab.json      lab state (systemd PID, cgroup id, ports, versions, active faults), no secrets
//
// The prepared homes live in ~/.cache/siemlab/opensearch/<v> (Cache.Prepare): the integ-test
// distribution (transport-netty4 only) with the security plugin, plus the ingest-common and
// lang-mustache modules assembled from Maven Central (Modules), so ingest pipelines work. A ready
// marker records the cache layout and module list; homes and farms made by older code are rebuilt.
//
// The indexer is a real OpenSearch node with the security plugin (HTTPS, basic auth, initialised with
// the plugin's securityadmin through indexer-security-init.sh), running as uid 65534 under a private
// `systemd --user` manager that has its own mount namespace and its own cgroups lab-<id> (id derived
// from DIR). The shipper is the real Filebeat OSS 7.10.2, built once from the Go module proxy into
// ~/.cache/siemlab/filebeat (FilebeatCache) and packaged with the lab's module (ShipperPackage). The
// manager and dashboard are the emulators of lab/emu, reached through the Emulators interface
// (lab/cmd/siemlab adapts lab/emu to it; with nil Emulators the lab runs the indexer only).
//
// Go API for tests in other packages:
//
//	l, err := lab.Up(ctx, lab.Options{Dir: dir, Version: "4.9.0", PortOffset: 100, Logger: log, Emulators: emus})
//	defer l.Down(ctx)
//	cmd.Env = append(os.Environ(), l.Env()...)   // SIEMCTL_CONFIG, APT_CONFIG, DPKG_ROOT
//	l.Fault(ctx, "cluster-red"); l.Heal(ctx, "cluster-red")
//	st, _ := l.Status(ctx)
//	l2, _ := lab.Open(dir)                         // from another process
package lab

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// EmuPackageSpec is the emulator package spec (the shape of emu.PackageSpec).
type EmuPackageSpec struct {
	Component string // manager | dashboard
	Version   string // upstream version
	Root      string
	Binary    string
	Ports     Ports
	Profile   Profile
	Syslog    bool // the manager listens for syslog (the profile's default or Options.Syslog)
	// SeedFrom is the id of the manager's first seeded agent (0: 1): a distributed lab's manager
	// nodes seed disjoint agents, each reporting to its node.
	SeedFrom int
}

// Emulators is what the lab needs from lab/emu (adapted in lab/cmd/siemlab).
type Emulators interface {
	PackageFiles(spec EmuPackageSpec) ([]File, error)
	SetAPIUserPassword(installDir, user, password string) error
	// SetDashboardKeystore writes the dashboard's own indexer credentials into its keystore.
	SetDashboardKeystore(confDir string, settings map[string]string) error
	Template(version, alertsPrefix string) []byte
	SetFault(root, kind string, on bool) error
}

// Options controls Up.
type Options struct {
	Dir     string // lab directory (created; made absolute)
	Version string // package version to install, default 4.9.0
	Profile string // layout (Profiles), default DefaultProfile
	// Syslog adds a syslog <remote> to a profile's ossec.conf that has none (a stock Wazuh one).
	Syslog     bool
	PortOffset int
	Logger     *slog.Logger
	Progress   io.Writer // phase lines with timings (nil: discard)
	Emulators  Emulators // nil: indexer only
	Binary     string    // multi-call binary shipped in the emulator packages (default: os.Executable)
	CacheDir   string    // default $HOME/.cache/siemlab
	Now        func() time.Time
	Poll       time.Duration // readiness poll interval, default 250ms
	// StartTimeout bounds each component's readiness wait (default 180s: a cold JVM on 2 busy cores).
	StartTimeout time.Duration
	// IndexerHeap is the OpenSearch heap (-Xms/-Xmx), e.g. 512m (default) or 2g: thousands of
	// indices (siemlab load) need more than the default.
	IndexerHeap string
}

// core is what a running lab, single (Lab) or distributed (Distributed), is made of: its state
// (DIR/lab.json), its layout, where it logs and reports progress, its emulators, and how often and
// how long it polls a component for readiness.
type core struct {
	st   *State
	prof Profile
	log  *slog.Logger
	prog io.Writer
	emu  Emulators
	poll time.Duration
	tmo  time.Duration
}

// Dir is the lab directory.
func (c *core) Dir() string { return c.st.Dir }

// State returns a copy of DIR/lab.json.
func (c *core) State() State { return *c.st }

// Profile is the lab's layout.
func (c *core) Profile() Profile { return c.prof }

// Lab is a running lab.
type Lab struct {
	core
	Timing map[string]time.Duration // per phase, filled by Up
	// filebeat is the cached Filebeat binary the shipper packages ship (set by Up).
	filebeat string
	// passwords, when set, are the secrets configure writes instead of generating them (the hosts
	// of a distributed lab share one set); cluster is the host's part of a distributed lab.
	passwords map[string]string
	cluster   *hostPlan
}

// runs tells whether a component (indexer, manager, dashboard, shipper) is installed and runs in
// this lab or host: a single lab runs the indexer, and the rest with the emulators; a host of a
// distributed lab runs its Components.
func (l *Lab) runs(component string) bool {
	if len(l.st.Components) > 0 {
		return slices.Contains(l.st.Components, component)
	}
	return component == "indexer" || l.st.Emulators
}

// addr is the address the lab's (or host's) components listen on.
func (l *Lab) addr() string {
	if l.st.Address != "" {
		return l.st.Address
	}
	return "127.0.0.1"
}

// DefaultCacheDir is $HOME/.cache/siemlab: OpenSearch homes, the Maven repository, Filebeat.
func DefaultCacheDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("lab cache: %w", err)
	}
	return filepath.Join(home, ".cache", "siemlab"), nil
}

// ErrAlreadyUp means DIR already holds a running lab.
var ErrAlreadyUp = errors.New("a lab is already up in this directory")

// Root returns the dpkg root.
func (l *Lab) Root() string { return l.st.Root }

// Ports returns the lab's ports.
func (l *Lab) Ports() Ports { return l.st.Ports }

// ConfigPath is DIR/siemctl.yaml.
func (l *Lab) ConfigPath() string { return filepath.Join(l.st.Dir, "siemctl.yaml") }

// SystemdAddress is the D-Bus address of the lab's systemd.
func (l *Lab) SystemdAddress() string { return l.systemd().Address() }

// Env returns the environment a siemctl run against this lab needs.
func (l *Lab) Env() []string {
	a := l.apt()
	return append([]string{"SIEMCTL_CONFIG=" + l.ConfigPath(), "SIEMLAB_DIR=" + l.st.Dir}, a.Env()...)
}

func (l *Lab) apt() *AptRoot {
	return &AptRoot{Root: l.st.Root, Repo: filepath.Join(l.st.Dir, "repo")}
}

func (l *Lab) systemd() *Systemd {
	return &Systemd{Dir: l.st.Dir, ID: l.st.ID, PID: l.st.SystemdPID}
}

// openState reads the lab recorded in dir/lab.json and its profile; a nil logger discards.
func openState(dir string, logger *slog.Logger) (*State, Profile, *slog.Logger, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, Profile{}, nil, fmt.Errorf("lab dir: %w", err)
	}
	st, err := readState(abs)
	if err != nil {
		return nil, Profile{}, nil, err
	}
	prof, err := ProfileFor(st.Profile)
	if err != nil {
		return nil, Profile{}, nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return st, prof, logger, nil
}

// Open returns the lab recorded in dir/lab.json. Fault, heal and status need emulators for the
// emulator-backed faults; pass them with OpenWith.
func Open(dir string) (*Lab, error) { return OpenWith(dir, nil, nil) }

// OpenWith is Open with a logger and the emulators.
func OpenWith(dir string, logger *slog.Logger, emus Emulators) (*Lab, error) {
	st, prof, logger, err := openState(dir, logger)
	if err != nil {
		return nil, err
	}
	return &Lab{core: core{st: st, prof: prof, log: logger, prog: io.Discard, emu: emus, poll: 250 * time.Millisecond, tmo: startTimeout()}}, nil
}

// secret file names under DIR/secrets.
const (
	secretIndexer      = "indexer"
	secretManager      = "manager"
	secretManagerLab   = ".manager-generated" // the generated manager password, kept for heal
	secretManagerWUI   = "manager-wui"
	secretKibanaserver = "kibanaserver"
)

func (l *Lab) secretPath(name string) string { return filepath.Join(l.st.Dir, "secrets", name) }

func (l *Lab) readSecret(name string) (string, error) {
	data, err := os.ReadFile(l.secretPath(name))
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", name, err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// writeSecret writes DIR/secrets/<name>; siemctl's own secrets (indexer, manager) also go where its
// profiles look for them by default, ROOT/etc/siemctl/secrets/<name>.
func (l *Lab) writeSecret(name, value string) error {
	if err := os.MkdirAll(filepath.Join(l.st.Dir, "secrets"), 0o700); err != nil {
		return fmt.Errorf("secrets dir: %w", err)
	}
	if err := writeFile(l.secretPath(name), []byte(value+"\n"), 0o600); err != nil {
		return err
	}
	if name != secretIndexer && name != secretManager {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.siemctlSecretPath(name)), 0o700); err != nil {
		return fmt.Errorf("secrets dir: %w", err)
	}
	return writeFile(l.siemctlSecretPath(name), []byte(value+"\n"), 0o600)
}

// GeneratePassword returns a random password with upper, lower, digit and symbol (the manager API's
// password policy), safe in YAML, JSON and shell files.
func GeneratePassword() (string, error) {
	const (
		upper   = "ABCDEFGHJKLMNPQRSTUVWXYZ"
		lower   = "abcdefghijkmnopqrstuvwxyz"
		digits  = "23456789"
		symbols = ".-_+"
		all     = upper + lower + digits
	)
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	out := []byte{upper[int(b[0])%len(upper)], lower[int(b[1])%len(lower)], digits[int(b[2])%len(digits)], symbols[int(b[3])%len(symbols)]}
	for _, c := range b[4:] {
		out = append(out, all[int(c)%len(all)])
	}
	return string(out), nil
}

// OpenParents makes dir and each of its parents below the system's temp dir traversable by everyone
// (0755): the indexer runs as an unprivileged user and must reach a lab directory made under a
// private temp dir (a test's t.TempDir() is 0700). It changes nothing outside the temp dir.
func OpenParents(dir string) error {
	tmp := filepath.Clean(os.TempDir())
	dir = filepath.Clean(dir)
	if dir != tmp && !strings.HasPrefix(dir, tmp+string(filepath.Separator)) {
		return fmt.Errorf("open parents: %s is not under %s", dir, tmp)
	}
	for d := dir; d != tmp; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			return fmt.Errorf("open parents: %w", err)
		}
	}
	return nil
}

// startTimeout bounds each wait for a component to come up: 180 s, or
// $SIEMLAB_START_TIMEOUT (a Go duration) on a machine too loaded for it.
func startTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("SIEMLAB_START_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return 180 * time.Second
}
