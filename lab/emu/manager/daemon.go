package manager

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/lab/emu/faults"
	"github.com/siemctl/siemctl/lab/emu/tlsutil"
)

// ossecLog appends daemon lines to logs/ossec.log ("YYYY/MM/DD HH:MM:SS <daemon>: <LEVEL>: <msg>").
type ossecLog struct {
	mu   sync.Mutex
	path string
	now  func() time.Time
	echo io.Writer // optional copy (stderr)
}

func (l *ossecLog) write(daemon, level, msg string) {
	line := fmt.Sprintf("%s %s: %s: %s\n", l.now().Format("2006/01/02 15:04:05"), daemon, level, msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(l.path), 0o750); err == nil {
		if f, err := os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o660); err == nil {
			_, _ = f.WriteString(line)
			_ = f.Close()
		}
	}
	if l.echo != nil {
		_, _ = io.WriteString(l.echo, line)
	}
}

// writeRaw logs pre-formatted "<daemon>: <LEVEL>: msg" lines with a timestamp.
func (l *ossecLog) writeRaw(lines []string) {
	for _, s := range lines {
		d, rest, _ := strings.Cut(s, ": ")
		lvl, msg, _ := strings.Cut(rest, ": ")
		l.write(d, lvl, msg)
	}
}

// DaemonOptions configures siem-managerd.
type DaemonOptions struct {
	Home       Home
	ReadyDelay time.Duration // how long the basic daemons report "restarting" after start (API 1017)
	SeedAgents int           // agents seeded when the database does not exist
	SeedFrom   int           // the first seeded agent's id (0: 1)
	Reseed     bool          // replace the database with SeedAgents agents
	// SeedVersion, with Reseed or SeedOnly, is the version every seeded agent that reports one runs
	// ("": the seed's mix of 4.9.0, 4.8.2 and 4.7.5).
	SeedVersion string
	SeedOnly    bool // seed and exit
	FaultsDir   string
	Hostname    string
	Now         func() time.Time
	Stderr      io.Writer
	Logger      *slog.Logger
	// Ready, when set, receives the bound addresses once every listener is up (tests).
	Ready func(Addrs)
}

// Addrs are the daemon's bound addresses.
type Addrs struct {
	API, Agent, Enrollment string
	Syslog                 string
	Queue                  string // analysisd's queue socket (unix datagram)
	Cluster                string // the master's cluster port ("" on a worker or without cluster)
}

// DaemonMain parses siem-managerd's flags and runs it.
func DaemonMain(ctx context.Context, args []string, stderr io.Writer, env func(string) string) int {
	fs := flag.NewFlagSet("siem-managerd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home := fs.String("home", "", "manager install directory (required)")
	delay := fs.Duration("ready-delay", 3*time.Second, "time the basic daemons report 'restarting' after start")
	seed := fs.Int("seed-agents", DefaultSeedAgents, "number of agents to seed when the agents database (queue/db/global.db) does not exist")
	seedFrom := fs.Int("seed-from", 1, "the first seeded agent's id (a worker's agents: ids after the master's)")
	reseed := fs.Bool("reseed", false, "replace the agents database with --seed-agents agents")
	seedOnly := fs.Bool("seed-only", false, "seed the agents database and exit")
	seedVersion := fs.String("seed-version", "", "with --reseed or --seed-only: the version of every seeded agent that reports one, e.g. 4.8.2 (default: a mix of 4.9.0, 4.8.2 and 4.7.5)")
	fs.Bool("f", true, "run in the foreground (always)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *home == "" {
		fmt.Fprintln(stderr, "siem-managerd: --home is required")
		return 2
	}
	abs, err := filepath.Abs(*home)
	if err != nil {
		fmt.Fprintf(stderr, "siem-managerd: %v\n", err)
		return 1
	}
	h := Home{Dir: abs}
	return RunDaemon(ctx, DaemonOptions{Home: h, ReadyDelay: *delay, SeedAgents: *seed, SeedFrom: *seedFrom, Reseed: *reseed, SeedOnly: *seedOnly, SeedVersion: *seedVersion,
		FaultsDir: h.FaultsDir(env(faults.EnvDir)), Stderr: stderr})
}

// RunDaemon runs the manager until ctx ends; it returns the process exit code.
func RunDaemon(ctx context.Context, o DaemonOptions) int {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(o.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.Hostname == "" {
		o.Hostname = o.Home.Hostname()
	}
	h := o.Home
	olog := &ossecLog{path: h.OssecLog(), now: o.Now, echo: o.Stderr}
	pid := os.Getpid()

	if o.SeedOnly || o.Reseed {
		if err := SeedFrom(h, o.SeedFrom, o.SeedAgents, o.Reseed, o.Now()); err != nil {
			fmt.Fprintf(o.Stderr, "siem-managerd: seed agents: %v\n", err)
			return 1
		}
		if err := setSeedVersion(h, o.SeedVersion); err != nil {
			fmt.Fprintf(o.Stderr, "siem-managerd: --seed-version: %v\n", err)
			return 2
		}
		if o.SeedOnly {
			return 0
		}
	}
	if _, err := h.ReadVersion(); err != nil {
		olog.write("wazuh-analysisd", "CRITICAL", fmt.Sprintf("Unable to read the installed version: %v", err))
		return 1
	}
	if err := ValidateInstall(h); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			olog.writeRaw(ce.Lines)
		} else {
			olog.write("wazuh-analysisd", "CRITICAL", err.Error())
		}
		markFailed(h, "wazuh-analysisd")
		return 1
	}
	confBytes, _ := os.ReadFile(h.OssecConf())
	conf, _ := ParseConfig(confBytes)
	local, _ := LoadLocalRules(h.LocalRules(), "etc/rules/local_rules.xml")
	rules, _ := NewRuleset(local)

	apiConf, err := LoadAPIConfig(h.APIYAML())
	if err != nil {
		olog.write("wazuh-apid", "ERROR", err.Error())
		markFailed(h, "wazuh-apid")
		return 1
	}
	if err := NewUserStore(h).EnsureDefaults(); err != nil {
		olog.write("wazuh-apid", "ERROR", err.Error())
		return 1
	}
	if err := SeedFrom(h, o.SeedFrom, o.SeedAgents, false, o.Now()); err != nil {
		olog.write("wazuh-db", "ERROR", err.Error())
		return 1
	}
	if _, err := os.Stat(h.ClientKeys()); errors.Is(err, os.ErrNotExist) {
		if agents, err := NewAgentStore(h).Agents(); err == nil {
			_ = writeClientKeys(h.ClientKeys(), append([]*Agent(nil), agents...))
		}
	}
	signKey, err := loadOrCreateJWTKey(h)
	if err != nil {
		olog.write("wazuh-apid", "ERROR", "(6003) Error loading the JWT secret: "+err.Error())
		return 1
	}

	var listeners []io.Closer
	closeAll := func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}
	defer closeAll()
	bindErr := func(daemon string, port int, err error) int {
		reason := "(98)-(Address already in use)"
		if !errors.Is(err, syscall.EADDRINUSE) {
			reason = err.Error()
		}
		olog.write(daemon, "CRITICAL", fmt.Sprintf("(1206): Unable to Bind port '%d' due to [%s]", port, reason))
		markFailed(h, daemon)
		return 1
	}
	var addrs Addrs
	var syslogConns []net.PacketConn
	for _, r := range conf.Remotes {
		host := r.LocalIP
		if host == "" {
			host = "0.0.0.0"
		}
		addr := net.JoinHostPort(host, strconv.Itoa(r.Port))
		switch {
		case r.Connection == "secure":
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return bindErr("wazuh-remoted", r.Port, err)
			}
			listeners = append(listeners, ln)
			addrs.Agent = ln.Addr().String()
			go acceptAndClose(ln)
			olog.write("wazuh-remoted", "INFO", fmt.Sprintf("Started (pid: %d). Listening on port %d/TCP (secure).", pid, r.Port))
		case r.Connection == "syslog" && strings.Contains(r.Protocol, "udp"):
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				return bindErr("wazuh-remoted", r.Port, err)
			}
			listeners = append(listeners, pc)
			syslogConns = append(syslogConns, pc)
			addrs.Syslog = pc.LocalAddr().String()
			olog.write("wazuh-remoted", "INFO", fmt.Sprintf("Started (pid: %d). Listening on port %d/UDP (syslog).", pid, r.Port))
		}
	}
	if !conf.AuthDisabled {
		ln, err := net.Listen("tcp", net.JoinHostPort(loopbackOr(conf), strconv.Itoa(conf.AuthPort)))
		if err != nil {
			return bindErr("wazuh-authd", conf.AuthPort, err)
		}
		listeners = append(listeners, ln)
		addrs.Enrollment = ln.Addr().String()
		go acceptAndClose(ln)
		olog.write("wazuh-authd", "INFO", fmt.Sprintf("Accepting connections on port %d. No password required.", conf.AuthPort))
	}
	fchk := faults.Checker{Dir: o.FaultsDir}
	api := NewAPIServer(APIOptions{Home: h, Config: apiConf, Logger: o.Logger, Now: o.Now, Faults: fchk, Hostname: o.Hostname, SignKey: signKey, Started: o.Now()})
	cd, err := startClusterd(ctx, h, confBytes, api, fchk, o.Now, olog)
	if err != nil {
		return 1
	}
	if cd != nil {
		defer cd.Close()
		api.o.Cluster = cd
		addrs.Cluster = cd.Addr()
	}
	apiLn, err := net.Listen("tcp", net.JoinHostPort(apiConf.HostAddr(), strconv.Itoa(apiConf.Port)))
	if err != nil {
		olog.write("wazuh-apid", "ERROR", fmt.Sprintf("Error starting API server: [Errno 98] error while attempting to bind on address ('%s', %d): address already in use", apiConf.HostAddr(), apiConf.Port))
		markFailed(h, "wazuh-apid")
		return 1
	}
	if apiConf.HTTPSEnabled() {
		cert, err := loadOrCreateCert(h, apiConf, o.Hostname, olog)
		if err != nil {
			_ = apiLn.Close()
			olog.write("wazuh-apid", "ERROR", "(2003) Error loading SSL/TLS certificates: "+err.Error())
			return 1
		}
		apiLn = tls.NewListener(apiLn, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	addrs.API = apiLn.Addr().String()
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(apiLn) }()
	olog.write("wazuh-apid", "INFO", fmt.Sprintf("Listening on %s:%d..", apiConf.HostAddr(), apiConf.Port))

	// Readiness: the basic daemons report "restarting" for ReadyDelay (API answers 1017 meanwhile).
	restartMarker := filepath.Join(h.RunDir(), ".restart")
	if err := writePidfiles(h, runningDaemons(conf), pid); err != nil {
		olog.write("wazuh-monitord", "ERROR", err.Error())
		return 1
	}
	defer removePidfiles(h, pid)
	if o.ReadyDelay > 0 {
		_ = os.WriteFile(restartMarker, nil, 0o640)
	} else {
		_ = removeIfExists(restartMarker)
	}
	defer func() { _ = removeIfExists(restartMarker) }()
	readyTimer := time.AfterFunc(o.ReadyDelay, func() { _ = removeIfExists(restartMarker) })
	defer readyTimer.Stop()
	for _, d := range []string{"wazuh-db", "wazuh-execd", "wazuh-analysisd", "wazuh-syscheckd", "wazuh-logcollector", "wazuh-monitord", "wazuh-modulesd"} {
		olog.write(d, "INFO", fmt.Sprintf("Started (pid: %d).", pid))
	}

	an := NewAnalyzer(h, conf, rules, o.Hostname, o.Now)
	an.Faults = fchk
	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue, err := listenQueue(h)
	if err != nil {
		olog.write(confDaemon, "CRITICAL", "(1211): Unable to access queue: '"+h.QueueSocket()+"'. Giving up: "+err.Error())
		markFailed(h, confDaemon)
		return 1
	}
	listeners = append(listeners, queue)
	addrs.Queue = queue.LocalAddr().String()
	defer os.Remove(h.QueueSocket())
	wg.Add(1)
	go func() {
		defer wg.Done()
		serveQueue(runCtx, queue, h, an, olog)
	}()
	for _, pc := range syslogConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveSyslog(runCtx, pc, conf, an, olog)
		}()
	}
	if conf.BackgroundAlertsInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			backgroundAlerts(runCtx, h, an, fchk, conf.BackgroundAlertsInterval, o.Now, o.Logger)
		}()
	}
	if o.Ready != nil {
		o.Ready(addrs)
	}
	<-ctx.Done()
	olog.write("wazuh-analysisd", "INFO", "(1225): SIGNAL [(15)-(Terminated)] Received. Exit Cleaning...")
	shCtx, shCancel := context.WithTimeout(context.Background(), time.Second)
	defer shCancel()
	_ = srv.Shutdown(shCtx)
	closeAll()
	cancel()
	wg.Wait()
	return 0
}

func loopbackOr(conf *Config) string {
	for _, r := range conf.Remotes {
		if r.LocalIP != "" {
			return r.LocalIP
		}
	}
	return "0.0.0.0"
}

func acceptAndClose(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}

func allowedSource(r []string, ip string) bool {
	if len(r) == 0 {
		return false
	}
	return ipMatches(r, ip)
}

func serveSyslog(ctx context.Context, pc net.PacketConn, conf *Config, an *Analyzer, olog *ossecLog) {
	var allowed []string
	for _, r := range conf.Remotes {
		if r.Connection == "syslog" {
			allowed = append(allowed, r.AllowedIPs...)
		}
	}
	eachPacket(ctx, pc, func(msg []byte, from net.Addr) {
		ip := from.String()
		if ua, ok := from.(*net.UDPAddr); ok {
			ip = ua.IP.String()
		}
		if !allowedSource(allowed, ip) {
			olog.write("wazuh-remoted", "WARNING", fmt.Sprintf("Message from '%s' not allowed. Cannot find the ID of the agent.", ip))
			return
		}
		ev := ParseSyslog(string(msg))
		ev.Location = ip
		if _, err := an.Process(ev); err != nil {
			olog.write("wazuh-analysisd", "ERROR", err.Error())
		}
	})
}

// eachPacket calls handle with each datagram read from pc until pc is closed or ctx ends (the
// syslog listener and the queue socket).
func eachPacket(ctx context.Context, pc net.PacketConn, handle func(msg []byte, from net.Addr)) {
	buf := make([]byte, 65536)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		handle(buf[:n], from)
	}
}

// backgroundEvents are realistic agent log lines; each tick one is replayed from an active agent.
var backgroundEvents = []struct {
	program string
	msg     func(n int) string
}{
	{"sshd", func(n int) string {
		return fmt.Sprintf("Accepted publickey for deploy from 10.0.7.15 port %d ssh2: ED25519 SHA256:Zr8WcVbYkQ2m1Xo5Jf3Yd0nHqLtPe9sAuC7iKx4vBgE", 1024+n%60000)
	}},
	{"sshd", func(n int) string {
		return fmt.Sprintf("Failed password for invalid user admin from 203.0.113.%d port 40122 ssh2", 1+n%254)
	}},
	{"sudo", func(int) string {
		return "  deploy : TTY=pts/0 ; PWD=/home/deploy ; USER=root ; COMMAND=/usr/bin/systemctl restart nginx"
	}},
	{"sshd", func(n int) string {
		return fmt.Sprintf("Failed password for root from 198.51.100.%d port 52811 ssh2", 1+n%254)
	}},
}

func backgroundAlerts(ctx context.Context, h Home, an *Analyzer, fchk faults.Checker, every time.Duration, now func() time.Time, log *slog.Logger) {
	store := NewAgentStore(h)
	n := 0
	emit := func() {
		if fchk.Active(faults.AgentsDisconnected) {
			return
		}
		agents, err := store.Agents()
		if err != nil {
			log.Warn("background alerts: agents", "err", err)
			return
		}
		var active []*Agent
		for _, a := range agents {
			if a.ID > 0 && a.Conn == StatusActive {
				active = append(active, a)
				if len(active) == 16 {
					break
				}
			}
		}
		if len(active) == 0 {
			return
		}
		a := active[n%len(active)]
		e := backgroundEvents[n%len(backgroundEvents)]
		n++
		t := now()
		msg := e.msg(n)
		pid := 1000 + n%30000
		full := fmt.Sprintf("%s %s %s[%d]: %s", t.Format(time.Stamp), a.Name, e.program, pid, msg)
		ev := ParseSyslog(full)
		ev.Location, ev.AgentID, ev.AgentName, ev.AgentIP = "/var/log/auth.log", a.IDString(), a.Name, a.IP
		if _, err := an.Process(ev); err != nil {
			log.Warn("background alert", "err", err)
		}
	}
	emit()
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			emit()
		}
	}
}

func loadOrCreateCert(h Home, c *APIConfig, hostname string, olog *ossecLog) (tls.Certificate, error) {
	resolve := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(h.SSLDir(), p)
	}
	certPath, keyPath := resolve(c.HTTPS.Cert), resolve(c.HTTPS.Key)
	_, errC := os.Stat(certPath)
	_, errK := os.Stat(keyPath)
	if errors.Is(errC, os.ErrNotExist) || errors.Is(errK, os.ErrNotExist) {
		// What wazuh-apid generates (api/api/configuration.py generate_self_signed_certificate): one
		// year, CN wazuh.com, the SAN DNS name localhost only, so clients verify it at https://localhost.
		pair, err := tlsutil.SelfSigned("wazuh.com", []string{"localhost"}, 365*24*time.Hour)
		if err != nil {
			return tls.Certificate{}, err
		}
		if err := os.MkdirAll(filepath.Dir(keyPath), 0o750); err != nil {
			return tls.Certificate{}, fmt.Errorf("ssl dir: %w", err)
		}
		if err := os.WriteFile(keyPath, pair.KeyPEM, 0o600); err != nil {
			return tls.Certificate{}, fmt.Errorf("write key: %w", err)
		}
		if err := os.WriteFile(certPath, pair.CertPEM, 0o640); err != nil {
			return tls.Certificate{}, fmt.Errorf("write cert: %w", err)
		}
		olog.write("wazuh-apid", "INFO", "Generated private key file in WAZUH_PATH/api/configuration/ssl/server.key")
		olog.write("wazuh-apid", "INFO", "Generated certificate file in WAZUH_PATH/api/configuration/ssl/server.crt")
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load %s: %w", certPath, err)
	}
	return cert, nil
}

// loadOrCreateJWTKey loads (or creates) the ES512 signing key under api/configuration/security.
func loadOrCreateJWTKey(h Home) (*ecdsa.PrivateKey, error) {
	p := filepath.Join(h.SecurityDir(), "private_key.pem")
	if b, err := os.ReadFile(p); err == nil {
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("%s: no PEM data", p)
		}
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%s: not an EC key", p)
		}
		return ek, nil
	}
	k, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate JWT key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encode JWT key: %w", err)
	}
	if err := os.MkdirAll(h.SecurityDir(), 0o750); err != nil {
		return nil, fmt.Errorf("security dir: %w", err)
	}
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("write JWT key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err == nil {
		_ = os.WriteFile(filepath.Join(h.SecurityDir(), "public_key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o640)
	}
	return k, nil
}

// setSeedVersion gives every agent that reports a version (000, the manager, aside) version v: a
// fleet of one version (a lab of thousands of agents all older than the manager).
func setSeedVersion(h Home, v string) error {
	if v == "" {
		return nil
	}
	if !reWazuhVersion.MatchString(v) {
		return fmt.Errorf("%q: want a version like 4.8.2", v)
	}
	tag := versionTag(v)
	return NewAgentStore(h).Update(func(agents []*Agent) ([]*Agent, bool, error) {
		for _, a := range agents {
			if a.ID != 0 && a.Version != "" {
				a.Version = tag
			}
		}
		return agents, true, nil
	})
}
