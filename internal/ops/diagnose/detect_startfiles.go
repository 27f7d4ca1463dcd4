package diagnose

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/siemctl/siemctl/internal/ops/hostfacts"
)

// ---- a file the indexer needs, missing ----------------------------------------------

// KindMissingFile is a file the indexer reads at its start that is not there (jvm.options,
// log4j2.properties, a file a setting names): Java's NoSuchFileException.
const KindMissingFile = "missing-file"

var noSuchFile = regexp.MustCompile(`java\.nio\.file\.NoSuchFileException: (\S+)`)

func detectMissingFile(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("java.nio.file.NoSuchFileException: ")
	if i < 0 {
		return Finding{}, false
	}
	m := noSuchFile.FindStringSubmatch(line)
	if m == nil {
		return Finding{}, false
	}
	file := m[1]
	f := Finding{Kind: KindMissingFile, at: i, Evidence: []string{line}}
	f.Cause = fmt.Sprintf("the %s needs %s, which does not exist", ev.Component, file)
	pkg := ""
	if ev.Config != nil {
		pkg = ev.Config.PackageNames()[ev.Component]
	}
	restore := "put it back from a backup"
	if pkg != "" {
		restore += fmt.Sprintf(", or the package's own copy of a configuration file: apt-get install --reinstall -o Dpkg::Options::=--force-confmiss %s (yum reinstall %s)", pkg, pkg)
	}
	f.Fix = fmt.Sprintf("%s: %s, then %s", file, restore, start(ev.Component))
	return f, true
}

// ---- an address that is not the host's -----------------------------------------------

// KindBindAddress is a host setting (network.host, http.host, transport.host) naming an address
// this host does not have: "BindException: Cannot assign requested address".
const KindBindAddress = "bind-address"

func detectBindAddress(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("Cannot assign requested address")
	if i < 0 || !strings.Contains(line, "BindException") {
		return Finding{}, false
	}
	f := Finding{Kind: KindBindAddress, at: i, Evidence: []string{line}}
	file := ev.indexerYAMLFile()
	yml := ev.indexerYAML()
	var set []string
	for _, k := range []string{"network.host", "network.bind_host", "http.host", "http.bind_host", "transport.host", "transport.bind_host"} {
		if v := yml[k]; v != "" {
			where := ""
			if n := lineOf(ev.path(file), k); n > 0 {
				where = fmt.Sprintf(" (line %d)", n)
			}
			set = append(set, fmt.Sprintf("%s: %s%s", k, v, where))
		}
	}
	if len(set) == 0 {
		f.Cause = "the indexer cannot bind an address this host does not have (java.net.BindException: Cannot assign requested address)"
		f.Fix = fmt.Sprintf("set network.host in %s to an address of this host (ip -br addr shows them), then %s", file, start(ev.Component))
		return f, true
	}
	f.Evidence = append(f.Evidence, file+" sets "+strings.Join(set, ", "))
	f.Cause = fmt.Sprintf("the indexer cannot bind %s: not an address of this host (%s)", strings.Join(set, ", "), file)
	f.Fix = fmt.Sprintf("set %s in %s to an address of this host (ip -br addr shows them; indexer.url and the other nodes' discovery settings name it too), then %s",
		strings.SplitN(set[0], ":", 2)[0], file, start(ev.Component))
	return f, true
}

// ---- the dashboard on another port ------------------------------------------------------

// KindDashboardPort is a dashboard that runs on another port than dashboard.url's (server.port
// changed): it waits for nothing, siemctl looks elsewhere.
const KindDashboardPort = "dashboard-port"

// dashboardRunning is the dashboard's "listening" line: OpenSearch Dashboards' "Server running at
// https://0.0.0.0:5601", the lab's "http server running at https://127.0.0.1:5601".
var dashboardRunning = regexp.MustCompile(`(?i)server running at (https?://[^\s"]+)`)

func detectDashboardPort(_ context.Context, ev *Evidence) (Finding, bool) {
	if ev.Config == nil {
		return Finding{}, false
	}
	u, want, ok := ev.runningHere(ev.Config.Dashboard.URL)
	if !ok {
		return Finding{}, false
	}
	f := Finding{Kind: KindDashboardPort, at: len(ev.Lines)}
	listens := ""
	if i, line := lastMatch(ev.Lines, dashboardRunning); i >= 0 {
		if ru, err := url.Parse(dashboardRunning.FindStringSubmatch(line)[1]); err == nil && ru.Port() != "" {
			listens = ru.Port()
			f.Evidence = append(f.Evidence, clip(line))
		}
	}
	file, conf := "", ""
	if ev.Config.Dashboard.ConfigDir != "" {
		if c, err := hostfacts.ReadDashboardConf(ev.path(ev.Config.Dashboard.ConfigDir)); err == nil {
			// named as the operator sees it (the read went through the services' root)
			file, conf = filepath.Join(ev.Config.Dashboard.ConfigDir, filepath.Base(c.ConfigFile)), c.Port
		}
	}
	got := cmpOr(listens, conf)
	if got == "" || got == want {
		return Finding{}, false
	}
	if conf != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: server.port: %s", file, conf))
	}
	f.Cause = fmt.Sprintf("the dashboard listens on port %s (server.port in %s) and siemctl's dashboard.url %s asks port %s", got, cmpOr(file, "its config"), ev.Config.Dashboard.URL, want)
	f.Fix = fmt.Sprintf("set server.port: %s in %s again and siemctl services restart dashboard; or, if port %s is meant, set dashboard.url to %s in siemctl's config",
		want, cmpOr(file, "the dashboard's config"), got, withPort(u, got))
	return f, true
}

// ---- run as root ---------------------------------------------------------------------------

// KindRunAsRoot is OpenSearch refusing to run as root: the unit (a drop-in's ExecStart= or
// User=) lost its unprivileged user.
const KindRunAsRoot = "run-as-root"

func detectRunAsRoot(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := ev.find("can not run opensearch as root", "can not run elasticsearch as root")
	if i < 0 {
		return Finding{}, false
	}
	f := Finding{Kind: KindRunAsRoot, at: i, Evidence: []string{line}}
	where := ev.unitLines(ev.Unit.DropInPaths, func(t string) bool {
		return (strings.HasPrefix(t, "ExecStart=") && t != "ExecStart=") || strings.HasPrefix(t, "User=")
	})
	f.Evidence = append(f.Evidence, where...)
	f.Cause = fmt.Sprintf("OpenSearch refuses to run as root, and %s starts it as root", ev.Unit.Name)
	if len(where) > 0 {
		f.Cause += " (set in " + where[len(where)-1] + ")"
		f.Fix = fmt.Sprintf("remove or correct %s (the package's unit starts OpenSearch as its service user), then systemctl daemon-reload and %s", where[len(where)-1], start(ev.Component))
	} else {
		f.Fix = fmt.Sprintf("start OpenSearch as its service user (systemctl cat %s shows what starts it as root), then systemctl daemon-reload and %s", ev.Unit.Name, start(ev.Component))
	}
	return f, true
}

// ---- plain HTTP where HTTPS is asked ----------------------------------------------------------

// KindPlainHTTP is an indexer whose HTTP layer serves plain HTTP (the security plugin's
// plugins.security.ssl.http.enabled: false) while indexer.url asks HTTPS: it answers, but not over
// TLS ("first record does not look like a TLS handshake"), and no certificate is at fault.
const KindPlainHTTP = "plain-http"

// IndexerPlainHTTP is that cause read from opensearch.yml in configDir (under root: the services'
// view, "" the host's) against indexerURL, with its fix; ok is false when the file does not switch
// TLS off or the URL is not HTTPS. Health's indexer.api and the start's diagnosis both say it from
// here.
func IndexerPlainHTTP(root, configDir, indexerURL string) (cause, fix string, ok bool) {
	u, err := url.Parse(indexerURL)
	if err != nil || u.Scheme != "https" || configDir == "" {
		return "", "", false
	}
	file := filepath.Join(configDir, "opensearch.yml")
	if v := readIndexerYAML(filepath.Join(root, file))["plugins.security.ssl.http.enabled"]; v != "false" {
		return "", "", false
	}
	where := ""
	if n := lineOf(filepath.Join(root, file), "plugins.security.ssl.http.enabled"); n > 0 {
		where = fmt.Sprintf(" (line %d)", n)
	}
	return fmt.Sprintf("the indexer serves plain HTTP: plugins.security.ssl.http.enabled: false in %s%s, and siemctl's indexer.url %s asks HTTPS", file, where, indexerURL),
		fmt.Sprintf("set plugins.security.ssl.http.enabled: true in %s%s again and siemctl services restart indexer (the shipper and the dashboard connect over HTTPS too, and the security plugin sends credentials in clear over plain HTTP)", file, where), true
}

func detectPlainHTTP(_ context.Context, ev *Evidence) (Finding, bool) {
	if ev.Config == nil {
		return Finding{}, false
	}
	if _, _, here := ev.runningHere(ev.Config.Indexer.URL); !here {
		return Finding{}, false
	}
	cause, fix, ok := IndexerPlainHTTP(ev.Host.Root, ev.Config.Indexer.ConfigDir, ev.Config.Indexer.URL)
	if !ok {
		return Finding{}, false
	}
	return Finding{Kind: KindPlainHTTP, at: len(ev.Lines), Cause: cause, Fix: fix}, true
}

// ---- a file the shipper's configuration names, missing ---------------------------------------

// shipperOpenMissing is Filebeat's exit on a file filebeat.yml names that is not there (a CA, a
// certificate, a key): "Exiting: error initializing publisher: 1 error: open PATH: no such file or
// directory reading <nil>", after its TLS layer's "Failed reading CA certificate: open PATH: …".
var shipperOpenMissing = regexp.MustCompile(`(?:Exiting: .*?|Failed reading [^:]*: )open (/\S+): no such file or directory`)

func detectShipperMissingFile(_ context.Context, ev *Evidence) (Finding, bool) {
	i, line := lastMatch(ev.Lines, shipperOpenMissing)
	if i < 0 {
		return Finding{}, false
	}
	missing := shipperOpenMissing.FindStringSubmatch(line)[1]
	f := Finding{Kind: KindMissingFile, at: i, Evidence: []string{clip(line)}}
	file, where, setting := ev.shipperConfigFile(), "", ""
	if b, err := os.ReadFile(ev.path(file)); err == nil && file != "" {
		for n, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, missing) {
				where = fmt.Sprintf("%s:%d", file, n+1)
				setting, _, _ = strings.Cut(strings.TrimSpace(l), ":")
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", where, strings.TrimSpace(l)))
				break
			}
		}
	}
	if where == "" {
		f.Cause = fmt.Sprintf("the shipper needs %s, which does not exist", missing)
		f.Fix = fmt.Sprintf("put %s back (from its backup or the certificates tool's output), then %s", missing, start(ev.Component))
		return f, true
	}
	f.Cause = fmt.Sprintf("%s at %s names %s, which does not exist", setting, where, missing)
	f.Fix = fmt.Sprintf("put %s back (from its backup or the certificates tool's output) or point %s at %s at where it is, then %s", missing, setting, where, start(ev.Component))
	return f, true
}
