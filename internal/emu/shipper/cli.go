package shipper

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/siemctl/siemctl/internal/emu/faults"
)

// Env is what the shipper needs from its process.
type Env struct {
	Exe    string // executable path (for default paths)
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Now    func() time.Time
	// Poll is how often the daemon checks the alerts file (default 1s); BackoffInit/BackoffMax bound
	// the retry backoff after a failed bulk request (defaults 1s and 60s, as Filebeat).
	Poll        time.Duration
	BackoffInit time.Duration
	BackoffMax  time.Duration
	// Hostname is reported in the events' host.name (default os.Hostname).
	Hostname string
}

// Options are the parsed global flags.
type Options struct {
	Paths       Paths
	ConfigFile  string
	ToStderr    bool
	StrictPerms bool
	Overrides   []string
	Command     []string
}

// ParseArgs parses Filebeat's global flags (anywhere on the command line) and the sub-command.
func ParseArgs(args []string, exe string) (*Options, error) {
	o := &Options{Paths: DefaultPaths(exe), ConfigFile: "shipper.yml", StrictPerms: true}
	val := func(i *int, name string) (string, error) {
		a := args[*i]
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
			return v, nil
		}
		if *i+1 >= len(args) {
			return "", fmt.Errorf("flag needs an argument: %s", name)
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, _ := strings.Cut(a, "=")
		var err error
		switch name {
		case "-c", "--c":
			o.ConfigFile, err = val(&i, "-c")
		case "--path.config", "-path.config":
			o.Paths.Config, err = val(&i, name)
		case "--path.data", "-path.data":
			o.Paths.Data, err = val(&i, name)
		case "--path.home", "-path.home":
			o.Paths.Home, err = val(&i, name)
		case "--path.logs", "-path.logs":
			o.Paths.Logs, err = val(&i, name)
		case "-E", "--E":
			var v string
			v, err = val(&i, "-E")
			o.Overrides = append(o.Overrides, v)
		case "-e", "--e":
			o.ToStderr = true
		case "--strict.perms", "-strict.perms":
			o.StrictPerms = !strings.HasSuffix(a, "=false")
		case "-d", "--environment":
			_, err = val(&i, name)
		case "--pipelines", "--index-management", "--dashboards", "--machine-learning":
			o.Command = append(o.Command, a)
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("unknown flag: %s", a)
			}
			o.Command = append(o.Command, a)
		}
		if err != nil {
			return nil, err
		}
	}
	if !filepath.IsAbs(o.ConfigFile) {
		o.ConfigFile = filepath.Join(o.Paths.Config, o.ConfigFile)
	}
	return o, nil
}

// KeystorePath is path.data/shipper.keystore.
func (o *Options) KeystorePath() string { return filepath.Join(o.Paths.Data, "shipper.keystore") }

// Main runs the shipper CLI and returns the exit code.
func Main(ctx context.Context, args []string, e Env) int {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	o, err := ParseArgs(args, e.Exe)
	if err != nil {
		fmt.Fprintf(e.Stderr, "Error: %v\n", err)
		return 1
	}
	exiting := func(err error) int {
		fmt.Fprintf(e.Stderr, "Exiting: %v\n", err)
		return 1
	}
	cmd := strings.Join(o.Command, " ")
	switch cmd {
	case "version":
		fmt.Fprintf(e.Stdout, "filebeat version %s (amd64), libbeat %s [aacf9ecd9c494aa0908f61fbca82c906b16562a8 built 2021-01-12 22:10:33 +0000 UTC]\n", BeatVersion, BeatVersion)
		return 0
	case "test config", "test output", "setup --pipelines", "setup --index-management",
		"setup --pipelines --index-management", "setup --index-management --pipelines", "":
	default:
		fmt.Fprintf(e.Stderr, "Error: unknown command %q for \"shipper\"\nRun 'shipper --help' for usage.\n", cmd)
		return 1
	}
	c, err := LoadConfig(o.ConfigFile, o.StrictPerms, o.Overrides, o.KeystorePath(), e.Getenv)
	if err != nil {
		return exiting(err)
	}
	log := newLogger(o, c, e)
	defer log.close()
	switch cmd {
	case "test config":
		if _, err := c.ESOutput(); err != nil {
			return exiting(err)
		}
		if _, err := c.Alerts(""); err != nil {
			return exiting(err)
		}
		fmt.Fprintln(e.Stdout, "Config OK")
		return 0
	case "test output":
		out, err := c.ESOutput()
		if err != nil {
			return exiting(err)
		}
		return testOutput(ctx, out, e.Stdout)
	case "":
		return runDaemon(ctx, o, c, log, e)
	}
	out, err := c.ESOutput()
	wantIdx := strings.Contains(cmd, "--index-management")
	if wantIdx && (err != nil || c.Bool("output.logstash.enabled", c.Has("output.logstash"))) {
		return exiting(errors.New("Index management requested but the Elasticsearch output is not configured/enabled"))
	}
	if err != nil {
		return exiting(err)
	}
	if wantIdx {
		if err := setupIndexManagement(ctx, c, out); err != nil {
			return exiting(err)
		}
		fmt.Fprintln(e.Stdout, "ILM policy and write alias loading not enabled.")
		fmt.Fprintln(e.Stdout)
		fmt.Fprintln(e.Stdout, "Index setup finished.")
	}
	if strings.Contains(cmd, "--pipelines") {
		if err := setupPipelines(ctx, out); err != nil {
			return exiting(err)
		}
		fmt.Fprintln(e.Stdout, "Loaded Ingest pipelines")
	}
	return 0
}

func setupIndexManagement(ctx context.Context, c *Config, out *ESOutput) error {
	if !c.Bool("setup.template.enabled", true) {
		return nil
	}
	if !c.Bool("setup.template.json.enabled", false) {
		return errors.New("error loading template: only JSON templates (setup.template.json.*) are supported by the shipper")
	}
	path, err := c.String("setup.template.json.path", "")
	if err != nil {
		return err
	}
	name, err := c.String("setup.template.json.name", "")
	if err != nil {
		return err
	}
	if path == "" || name == "" {
		return errors.New("error loading template: setup.template.json.path and setup.template.json.name must be set")
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("error loading template: error reading file %s for template: %w", path, err)
	}
	for _, h := range out.Hosts {
		cl, err := newESClient(out, h)
		if err != nil {
			return fmt.Errorf("error creating Elasticsearch client: %w", err)
		}
		if err := cl.put(ctx, "/_template/"+name, body); err != nil {
			return fmt.Errorf("error loading template: %w", err)
		}
	}
	return nil
}

func setupPipelines(ctx context.Context, out *ESOutput) error {
	for _, h := range out.Hosts {
		cl, err := newESClient(out, h)
		if err != nil {
			return fmt.Errorf("error creating Elasticsearch client: %w", err)
		}
		if err := cl.put(ctx, "/_ingest/pipeline/"+PipelineID, Pipeline()); err != nil {
			return fmt.Errorf("error loading pipeline for fileset siem/alerts: %w", err)
		}
	}
	return nil
}

var tlsVersions = map[uint16]string{tls.VersionTLS10: "TLSv1.0", tls.VersionTLS11: "TLSv1.1", tls.VersionTLS12: "TLSv1.2", tls.VersionTLS13: "TLSv1.3"}

// testOutput prints Filebeat's "test output" transcript, really dialing each host.
func testOutput(ctx context.Context, out *ESOutput, w io.Writer) int {
	for _, host := range out.Hosts {
		u, err := hostURL(out, host)
		disp := host
		if err == nil {
			disp = u.String()
		}
		fmt.Fprintf(w, "elasticsearch: %s...\n", disp)
		if err != nil {
			fmt.Fprintf(w, "  parse url... ERROR %v\n", err)
			return 1
		}
		fmt.Fprintln(w, "  parse url... OK")
		fmt.Fprintln(w, "  connection...")
		hostname, port := u.Hostname(), u.Port()
		if hostname == "" {
			fmt.Fprintln(w, "    parse host... ERROR missing host")
			return 1
		}
		fmt.Fprintln(w, "    parse host... OK")
		addrs, err := net.DefaultResolver.LookupHost(ctx, hostname)
		if err != nil {
			fmt.Fprintf(w, "    dns lookup... ERROR %v\n", err)
			return 1
		}
		fmt.Fprintln(w, "    dns lookup... OK")
		fmt.Fprintf(w, "    addresses: %s\n", strings.Join(addrs, ", "))
		d := net.Dialer{Timeout: 10 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addrs[0], port))
		if err != nil {
			fmt.Fprintf(w, "    dial up... ERROR %v\n", err)
			return 1
		}
		fmt.Fprintln(w, "    dial up... OK")
		if u.Scheme == "https" {
			fmt.Fprintln(w, "  TLS...")
			if out.VerificationMode == "none" {
				fmt.Fprintln(w, "    security... WARN server's certificate chain verification is disabled")
			} else {
				fmt.Fprintln(w, "    security: server's certificate chain verification is enabled")
			}
			tc, err := tlsConfig(out, hostname)
			if err != nil {
				_ = conn.Close()
				fmt.Fprintf(w, "    handshake... ERROR %v\n", err)
				return 1
			}
			tconn := tls.Client(conn, tc)
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = tconn.HandshakeContext(hctx)
			cancel()
			if err != nil {
				_ = conn.Close()
				fmt.Fprintf(w, "    handshake... ERROR %s\n", strings.TrimPrefix(err.Error(), "tls: failed to verify certificate: "))
				return 1
			}
			fmt.Fprintln(w, "    handshake... OK")
			fmt.Fprintf(w, "    TLS version: %s\n", tlsVersions[tconn.ConnectionState().Version])
			fmt.Fprintln(w, "    dial up... OK")
			_ = tconn.Close()
		} else {
			_ = conn.Close()
			fmt.Fprintln(w, "  TLS... WARN secure connection disabled")
		}
		cl, err := newESClient(out, host)
		if err != nil {
			fmt.Fprintf(w, "  talk to server... ERROR %v\n", err)
			return 1
		}
		v, err := cl.version(ctx)
		if err != nil {
			fmt.Fprintf(w, "  talk to server... ERROR %v\n", err)
			return 1
		}
		fmt.Fprintln(w, "  talk to server... OK")
		fmt.Fprintf(w, "  version: %s\n", v)
	}
	return 0
}

// logger writes Filebeat-style log lines ("<ISO time>\t<LEVEL>\t[<logger>]\t<caller>\t<msg>").
type logger struct {
	mu  sync.Mutex
	w   io.Writer
	f   *os.File
	now func() time.Time
}

func newLogger(o *Options, c *Config, e Env) *logger {
	l := &logger{w: e.Stderr, now: e.Now}
	if o.ToStderr || !c.Bool("logging.to_files", true) {
		return l
	}
	dir, _ := c.String("logging.files.path", o.Paths.Logs)
	name, _ := c.String("logging.files.name", "shipper")
	if err := os.MkdirAll(dir, 0o750); err == nil {
		if f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o640); err == nil {
			l.f, l.w = f, f
		}
	}
	return l
}

func (l *logger) close() {
	if l.f != nil {
		_ = l.f.Close()
	}
}

func (l *logger) log(level, name, caller, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if name != "" {
		name = "[" + name + "]\t"
	}
	fmt.Fprintf(l.w, "%s\t%s\t%s%s\t%s\n", l.now().UTC().Format("2006-01-02T15:04:05.000Z0700"), level, name, caller, msg)
}

func (l *logger) Infof(name, caller, format string, a ...any) {
	l.log("INFO", name, caller, fmt.Sprintf(format, a...))
}
func (l *logger) Warnf(name, caller, format string, a ...any) {
	l.log("WARN", name, caller, fmt.Sprintf(format, a...))
}
func (l *logger) Errorf(name, caller, format string, a ...any) {
	l.log("ERROR", name, caller, fmt.Sprintf(format, a...))
}

// faultsDir locates the lab's fault directory: $SIEM_LAB_FAULTS_DIR, else ROOT/var/lib/siem-lab-faults
// with ROOT three levels above the config file (ROOT/etc/shipper/shipper.yml).
func faultsDir(o *Options, getenv func(string) string) string {
	if v := getenv(faults.EnvDir); v != "" {
		return v
	}
	return faults.DirForRoot(filepath.Dir(filepath.Dir(filepath.Dir(o.ConfigFile))))
}
