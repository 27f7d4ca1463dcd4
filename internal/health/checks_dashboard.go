package health

import (
	"context"
	"errors"
	"fmt"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/shipper"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
)

// ---- dashboard, shipper ----------------------------------------------------

func checkDashboard(ctx context.Context, e *Env) Result {
	if e.Stack.Dashboard == nil {
		return unknown("not checked", "")
	}
	insecureNote(e, e.Stack.Config.Dashboard.Insecure, "dashboard", "dashboard")
	d, err := Shared(ctx, e, keyDashboard, e.Stack.Dashboard)
	if err != nil {
		return crit(errSummary(err), fixFor(err, "dashboard", "dashboard.ca_file", "dashboard"), e.Stack.Config.Dashboard.URL)
	}
	switch {
	case d.NotReady != "":
		return dashboardNoIndexer(ctx, e, fmt.Sprintf("dashboard not ready: HTTP %d %q", 503, d.NotReady))
	case d.State == "red" || d.OpenSearch != "":
		msg := d.OpenSearch
		if msg == "" {
			msg = "overall red"
		}
		return dashboardNoIndexer(ctx, e, "dashboard /api/status "+d.State+": "+msg)
	}
	state := ""
	if d.State != "" {
		state = ", /api/status " + d.State
	}
	switch d.Status {
	case 200:
		return ok("GET / answered 200" + state)
	case 302:
		return ok("GET / answered 302 to " + d.Location + state)
	}
	return crit(fmt.Sprintf("GET / answered %d (want 200 or 302)", d.Status), "siemctl services restart dashboard; check its log")
}

// dashboardNoIndexer explains a dashboard that cannot use its indexer: the indexer down (its own
// check has the fix), the dashboard's opensearch.hosts not answering or its TLS not verifying
// (from this host, with the dashboard's own CA), or else its own credentials refused.
func dashboardNoIndexer(ctx context.Context, e *Env, summary string) Result {
	c := e.Stack.Config
	if _, err := indexerInfo(ctx, e); err != nil && e.Stack.Indexer.OK() && !errors.Is(err, netclient.ErrUnauthorized) {
		return crit(summary+"; the indexer itself is not answering ("+errSummary(err)+")", "start the indexer first (see indexer.api), then the dashboard connects by itself")
	}
	cause, fix, evidence := hostfacts.DashboardReachCause(ctx, c.Dashboard.ConfigDir, c.Indexer.URL)
	return crit(summary+": "+cause, fix, evidence...)
}

func checkShipper(ctx context.Context, e *Env) Result {
	if !e.Stack.Config.Runs("shipper") {
		return notApplicable // its config is on the hosts that run it
	}
	if e.Stack.Shipper == nil {
		return unknown("not checked", "")
	}
	bin := e.Stack.Config.Shipper.Binary
	// test config and test output run at once: the output test is the real
	// tool's own dial, TLS handshake (its CA) and login (its keystore), and
	// costs one more process, not a wait; a dead output host costs the
	// check's deadline once.
	type outAns struct {
		OutputTest
		err error
	}
	outc := make(chan outAns, 1)
	go func() {
		t, err := e.Stack.Shipper.TestOutput(ctx)
		outc <- outAns{t, err}
	}()
	okc, msg, err := e.Stack.Shipper.TestConfig(ctx)
	if err != nil {
		return crit("cannot run "+bin+" test config: "+err.Error(), "is the shipper installed? siemctl services status shipper")
	}
	if !okc {
		return crit("config invalid: "+msg, "fix "+e.Stack.Config.Shipper.ConfigDir+" (run "+bin+" test config)", msg)
	}
	var out outAns
	select {
	case out = <-outc:
	case <-ctx.Done():
		return unknown("test config OK; test output did not finish before the deadline (output hosts not answering?)", "run "+bin+" test output")
	}
	if out.err != nil {
		if ctx.Err() != nil {
			return unknown("test config OK; test output did not finish before the deadline (output hosts not answering?)", "run "+bin+" test output")
		}
		return crit("cannot run "+bin+" test output: "+out.err.Error(), "siemctl services status shipper")
	}
	if r := out.Refused; r != nil {
		msg := fmt.Sprintf("output %s %s", r.URL, r.What())
		if said := r.Said(); said != "" {
			msg += ": " + said
		}
		return crit(msg, RefusalFix(e.Stack.Config, *r), out.Lines...)
	}
	if !out.OK {
		return crit("output unreachable: test output failed: "+lastFailure(out.Lines), "check the indexer (indexer.api) and the shipper's output section (output.elasticsearch.hosts in "+filepath.Join(e.Stack.Config.Shipper.ConfigDir, "filebeat.yml")+"), then run "+bin+" test output", out.Lines...)
	}
	return ok("test config OK, test output OK", out.Lines...)
}

// RefusalFix is the fix of an output that refuses the shipper's
// credentials: the user and password in its keystore (filebeat.yml's
// ${username} and ${password}) must be the indexer user's, and that user
// must be mapped to a role that may write the alert indices.
func RefusalFix(c *config.Config, r shipper.Refusal) string {
	ks := fmt.Sprintf("%s keystore add password --stdin --force -c %s --path.data %s", c.Shipper.Binary, filepath.Join(c.Shipper.ConfigDir, "filebeat.yml"), c.Shipper.DataDir)
	if r.Status == 403 {
		return fmt.Sprintf("map the shipper's output user (output.elasticsearch.username in %s) to a role that may write %s* (roles_mapping.yml, or the indexer's security REST API), then siemctl services restart shipper", filepath.Join(c.Shipper.ConfigDir, "filebeat.yml"), c.Indexer.AlertsIndexPrefix)
	}
	return fmt.Sprintf("put the indexer user's current password into the shipper's keystore: `%s` (the password on its stdin; the username likewise with `keystore add username`, if it changed), then siemctl services restart shipper", ks)
}

func lastFailure(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "ERROR") {
			return strings.TrimSpace(lines[i])
		}
	}
	return "see the transcript"
}
