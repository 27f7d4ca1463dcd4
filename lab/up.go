package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Up builds, installs, configures and starts a lab in opts.Dir and waits until it is healthy. On
// failure it stops whatever it started (the files under DIR stay for inspection).
func Up(ctx context.Context, opts Options) (_ *Lab, err error) {
	dir, prof, err := normalizeOptions(&opts)
	if err != nil {
		return nil, err
	}
	if st, err := readState(dir); err == nil && (running(st) || st.Topology == TopologyDistributed) {
		return nil, fmt.Errorf("%s: %w (siemlab down --dir %s)", dir, ErrAlreadyUp, dir)
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	l := &Lab{
		core: core{st: &State{ID: LabID(dir), Profile: prof.Name, Syslog: prof.Syslog || opts.Syslog, Dir: dir, Root: filepath.Join(dir, "root"),
			Ports: prof.Ports(opts.PortOffset), PortOffset: opts.PortOffset, Version: opts.Version, Versions: map[string]string{}, Emulators: opts.Emulators != nil,
			Faults: []string{}, StartedAt: opts.Now().UTC()},
			prof: prof, log: opts.Logger, prog: opts.Progress, emu: opts.Emulators, poll: opts.Poll, tmo: opts.StartTimeout},
		Timing: map[string]time.Duration{},
	}
	for _, u := range prof.Units() {
		if u == prof.IndexerUnit() || l.st.Emulators {
			l.st.Units = append(l.st.Units, u)
		}
	}
	for _, h := range defaultCgroupHierarchies {
		l.st.Cgroups = append(l.st.Cgroups, filepath.Join(h, "lab-"+l.st.ID))
	}
	if err := l.checkPortsFree(ctx); err != nil {
		return nil, err
	}
	began := time.Now()
	fmt.Fprintf(l.prog, "siemlab up: %s (profile %s, version %s, port offset %d, cgroup lab-%s)\n", dir, prof.Name, opts.Version, opts.PortOffset, l.st.ID)
	started := false
	defer func() {
		if err != nil && started {
			fmt.Fprintf(l.prog, "up failed, stopping the lab (files stay in %s)\n", dir)
			_ = l.Down(context.WithoutCancel(ctx))
		}
	}()
	phases := []phase{
		{"opensearch-cache", func(ctx context.Context) error { return l.prepareOpenSearch(ctx, opts) }},
		{"filebeat-cache", func(ctx context.Context) error { return l.prepareFilebeat(ctx, opts) }},
		{"certs", l.writeCerts},
		{"packages", func(ctx context.Context) error { return l.buildPackages(ctx, opts) }},
		{"install", l.install},
		{"configure", l.configure},
		{"systemd", func(ctx context.Context) error { started = true; return l.startSystemd(ctx) }},
		{"indexer", l.startIndexer},
		{"manager", l.startManager},
		{"dashboard", l.startDashboard},
		{"shipper", l.startShipper},
		{"first-alert", l.waitFirstAlert},
	}
	if err := runPhases(ctx, phases, l.Timing, l.prog); err != nil {
		return nil, err
	}
	l.Timing["total"] = time.Since(began)
	rss := l.MemoryRSS()
	fmt.Fprintf(l.prog, "lab up in %.1fs; memory (RSS in lab cgroups) %d MiB\n", l.Timing["total"].Seconds(), rss>>20)
	fmt.Fprintf(l.prog, "  . %s/env   # SIEMCTL_CONFIG, APT_CONFIG, DPKG_ROOT\n", dir)
	return l, nil
}

// phase is one step of bringing a lab up, timed by runPhases.
type phase struct {
	name string
	f    func(context.Context) error
}

// runPhases runs phases in order, stopping at the first failure; each one's time goes to timing
// and, as a line, to prog.
func runPhases(ctx context.Context, phases []phase, timing map[string]time.Duration, prog io.Writer) error {
	for _, p := range phases {
		t0 := time.Now()
		if err := p.f(ctx); err != nil {
			return fmt.Errorf("up: %s: %w", p.name, err)
		}
		dt := time.Since(t0)
		timing[p.name] = dt
		fmt.Fprintf(prog, "  %-17s %6.1fs\n", p.name, dt.Seconds())
	}
	return nil
}

// normalizeOptions checks opts and fills in the defaults; it returns the absolute lab directory and
// the profile.
func normalizeOptions(opts *Options) (dir string, prof Profile, err error) {
	if opts.Dir == "" {
		return "", Profile{}, errors.New("lab: no directory")
	}
	dir, err = filepath.Abs(opts.Dir)
	if err != nil {
		return "", Profile{}, fmt.Errorf("lab dir: %w", err)
	}
	if opts.Version == "" {
		opts.Version = Versions[0]
	}
	if !slices.Contains(Versions, opts.Version) {
		return "", Profile{}, fmt.Errorf("lab: unknown version %q (known: %s)", opts.Version, strings.Join(Versions, ", "))
	}
	prof, err = ProfileFor(opts.Profile)
	if err != nil {
		return "", Profile{}, err
	}
	if opts.IndexerHeap == "" {
		opts.IndexerHeap = defaultIndexerHeap
	}
	if !reHeap.MatchString(opts.IndexerHeap) {
		return "", Profile{}, fmt.Errorf("lab: indexer heap %q: want a size like 512m or 2g", opts.IndexerHeap)
	}
	if opts.PortOffset < 0 || opts.PortOffset > 5000 {
		return "", Profile{}, fmt.Errorf("lab: port offset %d out of range 0..5000", opts.PortOffset)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Poll == 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = startTimeout()
	}
	if opts.CacheDir == "" {
		if opts.CacheDir, err = DefaultCacheDir(); err != nil {
			return "", Profile{}, err
		}
	}
	if opts.Emulators != nil && opts.Binary == "" {
		if opts.Binary, err = os.Executable(); err != nil {
			return "", Profile{}, fmt.Errorf("lab: own executable: %w", err)
		}
	}
	return dir, prof, nil
}

func checkTools() error {
	var missing []string
	for _, t := range []string{"dpkg-deb", "dpkg-scanpackages", "apt-get", "dpkg-query", "unshare", "setpriv", "gzip"} {
		if _, err := lookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if _, err := JavaHome(); err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := os.Stat("/lib/systemd/systemd"); err != nil {
		missing = append(missing, "/lib/systemd/systemd")
	}
	if len(missing) > 0 {
		return fmt.Errorf("lab: missing tools: %s (scripts/install-deps.sh installs them)", strings.Join(missing, ", "))
	}
	if os.Geteuid() != 0 {
		return errors.New("lab: must run as root (cgroups, mount namespace, unprivileged indexer user)")
	}
	return nil
}

// checkTraversable fails when the indexer's unprivileged user cannot reach dir (a 0700 parent).
func checkTraversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("lab dir: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("lab dir: %s is not traversable by others (mode %v); OpenSearch runs as uid %d and must reach %s", d, fi.Mode().Perm(), IndexerUID, dir)
		}
		if d == "/" || d == filepath.Dir(d) {
			return nil
		}
	}
}

func (l *Lab) prepareOpenSearch(ctx context.Context, opts Options) error {
	c := &Cache{Dir: opts.CacheDir, Logger: l.log, Progress: l.prog}
	for _, v := range SetOf(l.st.Version) {
		osv, _ := OpenSearchVersion(v)
		t0 := time.Now()
		did, err := c.Prepare(ctx, osv)
		if err != nil {
			return err
		}
		if did {
			fmt.Fprintf(l.prog, "    prepared OpenSearch %s in %s (%.1fs, cold)\n", osv, c.Home(osv), time.Since(t0).Seconds())
		}
		if !l.runs("indexer") {
			continue
		}
		if err := LinkTree(c.Home(osv), l.distDir(osv)); err != nil {
			return err
		}
	}
	return nil
}

// prepareFilebeat builds Filebeat OSS into the cache once (minutes, cold) for the shipper package.
func (l *Lab) prepareFilebeat(ctx context.Context, opts Options) error {
	if l.emu == nil {
		return nil
	}
	c := &FilebeatCache{Dir: opts.CacheDir, Logger: l.log, Progress: l.prog}
	path, _, err := c.Ensure(ctx)
	if err != nil {
		return err
	}
	l.filebeat = path
	return nil
}

func (l *Lab) distDir(osv string) string { return filepath.Join(l.st.Dir, "dist", "opensearch-"+osv) }

func (l *Lab) writeCerts(context.Context) error {
	certs, err := GenerateCerts(CertOptions{Profile: l.prof})
	if err != nil {
		return err
	}
	return certs.WriteDir(filepath.Join(l.st.Dir, "certs"))
}

func (l *Lab) buildPackages(ctx context.Context, opts Options) error {
	repo := filepath.Join(l.st.Dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return fmt.Errorf("repo: %w", err)
	}
	javaHome, err := JavaHome()
	if err != nil {
		return err
	}
	if c := l.indexerCluster(); c != nil && l.runs("indexer") {
		for _, d := range c.PathRepo {
			if err := ensureSharedSnapshotDir(d); err != nil {
				return fmt.Errorf("shared snapshot directory: %w", err)
			}
		}
	}
	for _, v := range SetOf(l.st.Version) {
		osv, _ := OpenSearchVersion(v)
		if l.runs("indexer") {
			p, err := IndexerPackage(IndexerSpec{Profile: l.prof, Version: v, Root: l.st.Root, Dist: l.distDir(osv), HTTPPort: l.st.Ports.Indexer, TransPort: l.st.Ports.Transport, JavaHome: javaHome, Heap: opts.IndexerHeap,
				Cluster: l.indexerCluster()})
			if err != nil {
				return err
			}
			if _, err := BuildDeb(ctx, repo, p); err != nil {
				return err
			}
		}
		if l.emu == nil {
			continue
		}
		if l.runs("shipper") {
			sp, err := ShipperPackage(ShipperSpec{Layout: l.shipperLayout(), Version: v, Root: l.st.Root, Filebeat: l.filebeat,
				IndexerPort: l.st.Ports.Indexer, IndexerHosts: l.shipperHosts(), Template: l.emu.Template(v, l.prof.AlertsPrefix())})
			if err != nil {
				return err
			}
			if _, err := BuildDeb(ctx, repo, sp); err != nil {
				return err
			}
		}
		for _, comp := range []struct{ component, pkg string }{{"manager", l.prof.Manager}, {"dashboard", l.prof.Dashboard}} {
			if !l.runs(comp.component) {
				continue
			}
			files, err := l.emu.PackageFiles(EmuPackageSpec{Component: comp.component, Version: v, Root: l.st.Root, Binary: opts.Binary,
				Ports: l.st.Ports, Profile: l.prof, Syslog: l.st.Syslog, SeedFrom: l.seedFrom()})
			if err != nil {
				return fmt.Errorf("%s %s files: %w", comp.pkg, v, err)
			}
			if _, err := BuildDeb(ctx, repo, Package{Name: comp.pkg, Version: v + "-1", Files: files,
				Description: comp.pkg + " " + v + " (siemlab emulator of the " + comp.component + ")"}); err != nil {
				return err
			}
		}
	}
	return ScanRepo(ctx, repo)
}

func (l *Lab) install(ctx context.Context) error {
	a := l.apt()
	if err := a.Init(); err != nil {
		return err
	}
	if err := a.Update(ctx); err != nil {
		return err
	}
	var pkgs []string
	for i, p := range l.prof.Packages() {
		if l.runs(packageComponents[i]) {
			pkgs = append(pkgs, p+"="+l.st.Version+"-1")
		}
	}
	if err := a.Install(ctx, pkgs...); err != nil {
		return err
	}
	for _, p := range l.prof.Packages() {
		v, err := a.InstalledVersion(ctx, p)
		if err != nil {
			return err
		}
		if v != "" {
			l.st.Versions[p] = v
		}
	}
	return nil
}

// paths of the emulators' runtime files (lab contract).
func (l *Lab) managerDir() string { return filepath.Join(l.st.Root, l.prof.InstallDir) }

func (l *Lab) configure(ctx context.Context) error {
	certs := filepath.Join(l.st.Dir, "certs")
	read := func(n string) ([]byte, error) { return os.ReadFile(filepath.Join(certs, n)) }
	copyCert := func(src, dst string, mode os.FileMode, uid int) error {
		data, err := read(src)
		if err != nil {
			return fmt.Errorf("read cert: %w", err)
		}
		if err := writeFile(dst, data, mode); err != nil {
			return err
		}
		if uid >= 0 {
			if err := os.Chown(dst, uid, uid); err != nil {
				return fmt.Errorf("chown %s: %w", dst, err)
			}
		}
		return nil
	}
	// Secrets.
	pw := map[string]string{}
	for _, n := range []string{secretIndexer, secretManager, secretManagerWUI, secretKibanaserver} {
		p, ok := l.passwords[n]
		if !ok {
			var err error
			if p, err = GeneratePassword(); err != nil {
				return err
			}
		}
		pw[n] = p
		if err := l.writeSecret(n, p); err != nil {
			return err
		}
	}
	if err := l.writeSecret(secretManagerLab, pw[secretManager]); err != nil {
		return err
	}
	if l.runs("indexer") {
		if err := l.configureIndexer(copyCert, pw); err != nil {
			return err
		}
	}
	if l.emu != nil {
		if err := l.configureEmulated(ctx, copyCert, pw); err != nil {
			return err
		}
	}
	if l.cluster != nil {
		if err := l.configureHost(); err != nil {
			return err
		}
	}
	if err := l.writeConfig(); err != nil {
		return err
	}
	return writeState(l.st)
}

// packageComponents are the components of Profile.Packages, in the same order.
var packageComponents = []string{"indexer", "manager", "dashboard", "shipper"}

type certCopier func(src, dst string, mode os.FileMode, uid int) error

// configureIndexer puts the indexer's certificates (the node key readable by the indexer user
// only) and its internal users in place.
func (l *Lab) configureIndexer(copyCert certCopier, pw map[string]string) error {
	r := l.st.Root
	ic := filepath.Join(r, l.prof.IndexerConf(), "certs")
	for _, c := range []struct {
		name string
		mode os.FileMode
		uid  int
	}{{"root-ca.pem", 0o644, IndexerUID}, {"indexer.pem", 0o644, IndexerUID}, {"indexer-key.pem", 0o600, IndexerUID}, {"admin.pem", 0o644, -1}, {"admin-key.pem", 0o600, -1}} {
		if err := copyCert(c.name, filepath.Join(ic, c.name), c.mode, c.uid); err != nil {
			return err
		}
	}
	adminHash, err := bcrypt.GenerateFromPassword([]byte(pw[secretIndexer]), 12)
	if err != nil {
		return fmt.Errorf("hash admin password: %w", err)
	}
	kibanaHash, err := bcrypt.GenerateFromPassword([]byte(pw[secretKibanaserver]), 12)
	if err != nil {
		return fmt.Errorf("hash kibanaserver password: %w", err)
	}
	iu := filepath.Join(r, l.prof.IndexerConf(), "opensearch-security", "internal_users.yml")
	if err := writeFile(iu, InternalUsersYML(string(adminHash), string(kibanaHash)), 0o640); err != nil {
		return err
	}
	if err := os.Chown(iu, IndexerUID, IndexerUID); err != nil {
		return fmt.Errorf("chown %s: %w", iu, err)
	}
	return nil
}

// configureEmulated configures what runs here of the manager, the dashboard and the shipper.
func (l *Lab) configureEmulated(ctx context.Context, copyCert certCopier, pw map[string]string) error {
	r := l.st.Root
	{
		for _, v := range SetOf(l.st.Version) {
			if err := writeFile(l.templatePath(v), l.emu.Template(v, l.prof.AlertsPrefix()), 0o644); err != nil {
				return err
			}
		}
		if err := l.writeModuleTarballs(); err != nil {
			return err
		}
		if l.runs("manager") {
			// Manager: API users and the API certificate (signed by the lab CA, so siemctl verifies TLS).
			if err := l.emu.SetAPIUserPassword(l.managerDir(), l.prof.APIUser, pw[secretManager]); err != nil {
				return fmt.Errorf("set manager API password: %w", err)
			}
			if err := l.emu.SetAPIUserPassword(l.managerDir(), l.prof.WUIUser, pw[secretManagerWUI]); err != nil {
				return fmt.Errorf("set manager API password: %w", err)
			}
			if l.prof.APICertFromCA || l.st.Address != "" {
				ssl := filepath.Join(l.managerDir(), "api/configuration/ssl")
				if err := copyCert("api.pem", filepath.Join(ssl, "server.crt"), 0o644, -1); err != nil {
					return err
				}
				if err := copyCert("api-key.pem", filepath.Join(ssl, "server.key"), 0o600, -1); err != nil {
					return err
				}
			}
		}
		if l.runs("dashboard") {
			if err := l.writeDashboardAPIConfig(pw[secretManagerWUI]); err != nil {
				return err
			}
			// The dashboard's own indexer user, in its keystore (as the Wazuh installer does).
			if err := l.emu.SetDashboardKeystore(filepath.Join(r, l.prof.DashboardConf()),
				map[string]string{"opensearch.username": "kibanaserver", "opensearch.password": pw[secretKibanaserver]}); err != nil {
				return fmt.Errorf("dashboard keystore: %w", err)
			}
			// Dashboard certs.
			dc := filepath.Join(r, l.prof.DashboardConf(), "certs")
			for _, c := range [][2]string{{"dashboard.pem", "dashboard.pem"}, {"dashboard-key.pem", "dashboard-key.pem"}, {"root-ca.pem", "root-ca.pem"}} {
				mode := os.FileMode(0o644)
				if strings.Contains(c[0], "key") {
					mode = 0o600
				}
				if err := copyCert(c[0], filepath.Join(dc, c[1]), mode, -1); err != nil {
					return err
				}
			}
		}
		if !l.runs("shipper") {
			return nil
		}
		// Shipper: CA, keystore (through the real Filebeat), template.
		sh := l.shipperLayout()
		if err := copyCert("root-ca.pem", filepath.Join(r, sh.ConfigDir, "certs/root-ca.pem"), 0o644, -1); err != nil {
			return err
		}
		if err := l.shipperKeystore(ctx, "admin", pw[secretIndexer]); err != nil {
			return err
		}
		tpl := filepath.Join(r, sh.TemplateFile())
		if _, err := os.Stat(tpl); err != nil {
			if err := writeFile(tpl, l.emu.Template(l.st.Version, l.prof.AlertsPrefix()), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *Lab) startSystemd(ctx context.Context) error {
	sysDir := filepath.Join(l.st.Root, "etc/systemd/system")
	if err := os.MkdirAll(sysDir, 0o755); err != nil {
		return fmt.Errorf("unit dir: %w", err)
	}
	sd, err := StartSystemd(ctx, SystemdOptions{
		Dir: l.st.Dir, ID: l.st.ID, SystemDir: sysDir,
		UnitPath: []string{sysDir, filepath.Join(l.st.Root, "usr/lib/systemd/system")},
		Env:      []string{"DPKG_ROOT=" + l.st.Root},
	})
	if err != nil {
		return err
	}
	l.st.SystemdPID = sd.PID
	return writeState(l.st)
}

func (l *Lab) withUnits(ctx context.Context, f func(conn unitConn) error) error {
	conn, err := l.systemd().Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return f(conn)
}

func (l *Lab) startUnit(ctx context.Context, unit string) error {
	return l.withUnits(ctx, func(c unitConn) error { return StartUnit(ctx, c, unit) })
}

func (l *Lab) stopUnit(ctx context.Context, unit string) error {
	return l.withUnits(ctx, func(c unitConn) error { return StopUnit(ctx, c, unit) })
}

func (l *Lab) startIndexer(ctx context.Context) error {
	if err := l.startUnit(ctx, l.prof.IndexerUnit()); err != nil {
		return err
	}
	if err := l.waitIndexerSecure(ctx); err != nil {
		return err
	}
	return l.waitClusterUsable(ctx)
}

// waitIndexerSecure waits for the HTTPS port, runs the security init when the node answers 503
// ("Security not initialized"), and waits for an authenticated 200 on GET /.
func (l *Lab) waitIndexerSecure(ctx context.Context) error {
	c, err := l.indexer()
	if err != nil {
		return err
	}
	initDone := false
	logs := filepath.Join(l.st.Root, l.prof.IndexerLogs())
	return l.waitAnswers(ctx, l.prof.IndexerUnit(), "indexer (logs: "+logs+")", func(ctx context.Context) (bool, string, error) {
		code, body, err := c.do(ctx, http.MethodGet, "/", nil)
		switch {
		case err != nil:
			return false, err.Error(), nil
		case code == http.StatusOK:
			return true, "", nil
		case code == http.StatusServiceUnavailable && !initDone:
			out, err := l.securityInit(ctx)
			if err != nil {
				l.log.Debug("security init not yet", "err", err)
				return false, err.Error(), nil
			}
			l.log.Debug("security init", "output", tail(out, 400))
			initDone = true
			return false, "", nil
		default:
			return false, fmt.Sprintf("HTTP %d %s", code, tail(string(body), 120)), nil
		}
	})
}

// waitAnswers polls probe every poll interval, up to the lab's start timeout, until the component
// answers; it fails at once when unit is no longer alive. probe returns whether the component
// answered and what it saw otherwise, which the timeout error names.
func (l *Lab) waitAnswers(ctx context.Context, unit, what string, probe func(context.Context) (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, l.tmo)
	defer cancel()
	var last string
	err := poll(ctx, l.poll, func() (bool, error) {
		if err := l.unitAlive(ctx, unit); err != nil {
			return false, err
		}
		ok, seen, err := probe(ctx)
		if seen != "" {
			last = seen
		}
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("%s not ready (last: %s): %w", what, last, err)
	}
	return nil
}

// securityInit runs ROOT/usr/share/<indexer>/bin/indexer-security-init.sh with extra args.
func (l *Lab) securityInit(ctx context.Context, args ...string) (string, error) {
	out, err := run(ctx, append(os.Environ(), "DPKG_ROOT="+l.st.Root), "", filepath.Join(l.st.Root, l.prof.SecurityInit()), args...)
	if err != nil {
		return string(out), fmt.Errorf("security init: %w", err)
	}
	return string(out), nil
}

func (l *Lab) waitClusterUsable(ctx context.Context) error {
	c, err := l.indexer()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.tmo)
	defer cancel()
	return poll(ctx, l.poll, func() (bool, error) {
		h, err := c.health(ctx, "?wait_for_status=yellow&timeout=10s")
		if err != nil {
			return false, nil
		}
		return h.Status == "green" || h.Status == "yellow", nil
	})
}

// unitAlive fails when a unit has failed or stopped (no point waiting for its port).
func (l *Lab) unitAlive(ctx context.Context, unit string) error {
	st, err := l.unitState(ctx, unit)
	if err != nil {
		return err
	}
	if st.ActiveState == "failed" || st.ActiveState == "inactive" {
		return fmt.Errorf("unit %s is %s/%s", unit, st.ActiveState, st.SubState)
	}
	return nil
}

func (l *Lab) startManager(ctx context.Context) error {
	if l.emu == nil || !l.runs("manager") {
		return nil
	}
	if err := l.startUnit(ctx, l.prof.ManagerUnit()); err != nil {
		return err
	}
	return l.waitManagerAPI(ctx)
}

func (l *Lab) waitManagerAPI(ctx context.Context) error {
	pw, err := l.readSecret(secretManager)
	if err != nil {
		return err
	}
	return l.waitAnswers(ctx, l.prof.ManagerUnit(), "manager API", func(ctx context.Context) (bool, string, error) {
		// The API's own certificate is written by the API at its first start (wazuh profile).
		hc, err := l.managerAPIClient()
		if err != nil {
			return false, err.Error(), nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.managerAPIURL()+"/security/user/authenticate", nil)
		if err != nil {
			return false, "", err
		}
		req.SetBasicAuth(l.prof.APIUser, pw)
		resp, err := hc.Do(req)
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
}

func (l *Lab) startDashboard(ctx context.Context) error {
	if l.emu == nil || !l.runs("dashboard") {
		return nil
	}
	if err := l.startUnit(ctx, l.prof.DashboardUnit()); err != nil {
		return err
	}
	hc, err := tlsClient(filepath.Join(l.st.Dir, "certs", "root-ca.pem"), 10*time.Second)
	if err != nil {
		return err
	}
	return l.waitAnswers(ctx, l.prof.DashboardUnit(), "dashboard", func(ctx context.Context) (bool, string, error) {
		var last string
		for _, scheme := range []string{"https", "http"} {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s:%d/", scheme, l.addr(), l.st.Ports.Dashboard), nil)
			if err != nil {
				return false, "", err
			}
			resp, err := hc.Do(req)
			if err != nil {
				last = err.Error()
				continue
			}
			resp.Body.Close()
			last = resp.Status
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusFound {
				return true, "", nil
			}
		}
		return false, last, nil
	})
}

// startShipper loads the ingest pipelines and the alerts template through the real Filebeat (as the
// install guide does) and starts its unit.
func (l *Lab) startShipper(ctx context.Context) error {
	if l.emu == nil || !l.runs("shipper") {
		return nil
	}
	for _, args := range [][]string{{"setup", "--pipelines"}, {"setup", "--index-management", "-E", "output.logstash.enabled=false"}} {
		out, err := l.shipperCmd(ctx, "", args...)
		if err != nil {
			return fmt.Errorf("shipper %s: %w", strings.Join(args, " "), err)
		}
		l.log.Debug("shipper", "args", args, "output", tail(out, 300))
	}
	return l.startUnit(ctx, l.shipperLayout().Unit())
}

// alertsFile is the manager's alerts file, the shipper's input.
func (l *Lab) alertsFile() string { return filepath.Join(l.managerDir(), "logs/alerts/alerts.json") }

// waitFirstAlert waits until an alert of the last 5 minutes is searchable in today's alerts index,
// so that a lab is healthy end to end (alerts.flow OK) when Up returns. It is bounded by the start
// timeout; on timeout the error names the hop that broke (the manager wrote no alert, or the
// shipper delivered none of those it wrote).
func (l *Lab) waitFirstAlert(ctx context.Context) error {
	if l.emu == nil || !l.runs("manager") {
		return nil
	}
	c, err := l.indexer()
	if err != nil {
		return err
	}
	t0 := time.Now()
	index, err := firstAlert(ctx, c, l.prof.AlertsPrefix(), l.poll, l.tmo, time.Now, l.alertsFile())
	if err != nil {
		return err
	}
	fmt.Fprintf(l.prog, "    alerts flow end to end: an alert of the last 5 minutes is searchable in %s (waited %.1fs)\n", index, time.Since(t0).Seconds())
	return nil
}

// firstAlert polls c for a document with a timestamp in the last 5 minutes in today's alerts index
// (the index name follows the clock, so a wait across midnight looks at the new day's index) and
// returns that index. After timeout it reports which hop broke, reading alertsFile.
func firstAlert(parent context.Context, c *indexerClient, prefix string, every, timeout time.Duration, now func() time.Time, alertsFile string) (string, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	body := map[string]any{"query": map[string]any{"range": map[string]any{"timestamp": map[string]any{"gte": "now-5m"}}}}
	var index, last string
	err := poll(ctx, every, func() (bool, error) {
		index = prefix + now().UTC().Format("2006.01.02")
		code, data, err := c.do(ctx, http.MethodPost, "/"+index+"/_count?ignore_unavailable=true&allow_no_indices=true", body)
		switch {
		case err != nil:
			if ctx.Err() == nil { // not the deadline cutting the last try short
				last = err.Error()
			}
			return false, nil
		case code != http.StatusOK:
			last = fmt.Sprintf("HTTP %d %s", code, tail(string(data), 120))
			return false, nil
		}
		var n struct {
			Count int64 `json:"count"`
		}
		if err := json.Unmarshal(data, &n); err != nil {
			last = "count: " + err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d alerts of the last 5 minutes", n.Count)
		return n.Count > 0, nil
	})
	if err == nil {
		return index, nil
	}
	if parent.Err() != nil {
		return "", err
	}
	lines, ferr := countLines(alertsFile)
	hop := fmt.Sprintf("manager: it wrote no alert to %s (are the agents sending? see the manager's log)", alertsFile)
	switch {
	case ferr != nil && !errors.Is(ferr, os.ErrNotExist):
		hop = fmt.Sprintf("unknown: cannot read %s: %v", alertsFile, ferr)
	case lines > 0:
		hop = fmt.Sprintf("shipper: the manager wrote %d alert(s) to %s, none reached the indexer (see the shipper's log)", lines, alertsFile)
	}
	return "", fmt.Errorf("no alert searchable in %s after %s (last: %s); broken hop: %s: %w", index, timeout, last, hop, err)
}

// countLines counts the lines of a file (0 when it does not exist yet).
func countLines(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return bytes.Count(data, []byte("\n")), nil
}

// Down stops every process of the lab (private systemd and everything in its cgroups), removes its
// cgroups (its mounts live in the manager's mount namespace and vanish with it) and lab.json. It is
// idempotent; files under DIR stay.
func (l *Lab) Down(ctx context.Context) error {
	sd := l.systemd()
	if err := sd.Stop(ctx); err != nil {
		return fmt.Errorf("down: %w", err)
	}
	if err := os.Remove(filepath.Join(l.st.Dir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("down: %w", err)
	}
	_ = os.Remove(filepath.Join(l.st.Dir, "rt", "systemd", "private"))
	return nil
}

// DownDir is Down for a directory; it is a no-op when no lab state exists, but still sweeps the
// cgroups derived from the directory.
func DownDir(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("lab dir: %w", err)
	}
	if IsDistributed(abs) {
		d, err := OpenDistributed(abs, nil, nil)
		if err != nil {
			return err
		}
		return d.Down(ctx)
	}
	l, err := Open(abs)
	if errors.Is(err, ErrNoLab) {
		sd := &Systemd{Dir: abs, ID: LabID(abs)}
		return errors.Join(sd.Stop(ctx), downHostDirs(ctx, abs))
	}
	if err != nil {
		return err
	}
	return l.Down(ctx)
}

// MemoryRSS is the sum of VmRSS of the processes in the lab's cgroups, in bytes.
func (l *Lab) MemoryRSS() int64 {
	var sum int64
	for _, pid := range l.systemd().Procs() {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				var kb int64
				if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
					sum += kb << 10
				}
			}
		}
	}
	return sum
}

func lookPath(name string) (string, error) {
	for _, d := range strings.Split("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:"+os.Getenv("PATH"), ":") {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, syscall.ENOENT)
}

// writeDashboardAPIConfig writes the dashboard's Wazuh app config (wazuh.yml) with the manager API
// at https://localhost and the WUI user's password, as the Wazuh installer leaves it (mode 0600:
// it holds a secret). Profiles without one skip it.
func (l *Lab) writeDashboardAPIConfig(password string) error {
	if l.prof.DashboardAPIConfig == "" {
		return nil
	}
	data := fmt.Appendf(nil, `---
#
# Wazuh app - App configuration file (written by siemlab, as the Wazuh installer leaves it)
#
hosts:
  - default:
      url: https://localhost
      port: %d
      username: %s
      password: "%s"
      run_as: false
`, l.st.Ports.API, l.prof.WUIUser, password)
	return writeFile(filepath.Join(l.st.Root, l.prof.DashboardAPIConfig), data, 0o600)
}

// prepareDir makes a lab's directory (0755: OpenSearch runs as another user and must traverse it)
// and checks the tools the lab runs, before anything starts.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lab dir: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("lab dir: %w", err)
	}
	if err := checkTraversable(dir); err != nil {
		return err
	}
	return checkTools()
}
