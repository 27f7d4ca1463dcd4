package health

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/ops/verdict"
)

// ---- certs, secrets ----------------------------------------------------------

func checkCerts(ctx context.Context, e *Env) Result {
	if e.Stack.Certs == nil {
		return unknown("not checked", "")
	}
	certs, err := e.Stack.Certs(ctx)
	if err != nil {
		return unknown("cannot read certificates: "+err.Error(), "")
	}
	now := e.now()
	var expired, soon, evidence, unread []string
	minDays := -1.0
	read := 0
	for _, c := range certs {
		if c.Err != nil {
			unread = append(unread, c.Component)
			evidence = append(evidence, fmt.Sprintf("%s %s: %s", c.Component, c.Source, errSummary(c.Err)))
			continue
		}
		read++
		days := c.NotAfter.Sub(now).Hours() / 24
		if minDays < 0 || days < minDays {
			minDays = days
		}
		line := fmt.Sprintf("%s %s: %s expires %s (%d days)", c.Component, c.Source, c.Subject, c.NotAfter.UTC().Format("2006-01-02"), int(days))
		evidence = append(evidence, line)
		switch {
		case days < 0:
			expired = append(expired, c.Component+" "+c.Source)
		case days < 30:
			soon = append(soon, fmt.Sprintf("%s %s (%d days)", c.Component, c.Source, int(days)))
		}
	}
	r := ok(fmt.Sprintf("%d certificate(s), next expiry in %d days", read, int(minDays)), evidence...)
	if minDays >= 0 {
		r.Metrics = map[string]float64{"min_days_left": minDays}
	}
	// The indexer's node certificate judged against every client's CA:
	// the cause and the side that must change.
	if causes := indexerTLSCauses(ctx, e); len(causes) > 0 {
		var sums, fixes []string
		for _, c := range causes {
			sums, fixes = append(sums, c.Summary), append(fixes, c.Fix)
			r.Evidence = append(r.Evidence, c.Evidence...)
		}
		r.Status, r.Summary, r.Fix = Crit, strings.Join(sums, "; "), verdict.JoinFixes(fixes)
		return r
	}
	switch {
	case len(expired) > 0:
		r.Status, r.Summary = Crit, "expired: "+strings.Join(expired, ", ")
		r.Fix = "renew the certificates (wazuh-certs-tool / your PKI) and restart the component"
	case len(soon) > 0:
		r.Status, r.Summary = Warn, "expiring within 30 days: "+strings.Join(soon, ", ")
		r.Fix = "renew the certificates before they expire"
	case len(unread) > 0:
		r.Status = Unknown
		r.Summary = "could not read the certificate of " + strings.Join(unread, ", ")
		if read > 0 {
			r.Summary += fmt.Sprintf("; %d other(s) fine, next expiry in %d days", read, int(minDays))
		}
		r.Fix = "see the component's own check (indexer.api, manager.api, dashboard)"
	case len(certs) == 0:
		r.Summary = "no TLS endpoint or certificate file to check"
	}
	return r
}

func checkSecrets(ctx context.Context, e *Env) Result {
	c := e.Stack.Config
	var problems, fixes, evidence []string
	for name, sec := range map[string]config.Secret{"indexer": c.Indexer.Secret, "manager": c.Manager.Secret} {
		mode, loose, found := sec.FileMode()
		if !found {
			continue
		}
		evidence = append(evidence, fmt.Sprintf("%s password file %s mode %#o", name, sec.PasswordFile, mode))
		if loose {
			problems = append(problems, fmt.Sprintf("%s.password_file %s is readable by group/others (%#o)", name, sec.PasswordFile, mode))
			fixes = append(fixes, "chmod 600 "+sec.PasswordFile)
		}
	}
	for key, insecure := range map[string]bool{"indexer.insecure": c.Indexer.Insecure, "manager.insecure": c.Manager.Insecure, "dashboard.insecure": c.Dashboard.Insecure} {
		if insecure {
			problems = append(problems, key+": true (TLS not verified)")
			fixes = append(fixes, "set "+strings.TrimSuffix(key, ".insecure")+".ca_file and remove "+key)
		}
	}
	probeErr := error(nil)
	if e.Stack.DefaultCredentials != nil {
		defs, err := e.Stack.DefaultCredentials(ctx, e.Deep)
		evidence = append(evidence, defs.Evidence...)
		if err != nil {
			probeErr = err
			evidence = append(evidence, "default-credential probe: "+err.Error())
		}
		for _, d := range defs.Found {
			problems = append(problems, "default credentials accepted: "+d)
			fixes = append(fixes, "change the default password ("+strings.Fields(d)[0]+")")
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return warn(strings.Join(problems, "; "), verdict.JoinFixes(fixes), evidence...)
	}
	if probeErr != nil {
		return unknown("secret files private, TLS verification on; "+probeErr.Error(), "see indexer.api and manager.api", evidence...)
	}
	tlsWord := "TLS verification on"
	if causes := indexerTLSCauses(ctx, e); len(causes) > 0 {
		tlsWord += ", but the indexer certificate fails it (see certs)"
	}
	return ok("no default credentials, secret files private, "+tlsWord, evidence...)
}

// indexerTLSCauses is the run's one judgement of the indexer's node
// certificate (nil: fine, or not judged).
func indexerTLSCauses(ctx context.Context, e *Env) []hostfacts.TLSCause {
	if e.Stack.IndexerTLS == nil {
		return nil
	}
	causes, err := Shared(ctx, e, keyIndexerTLS, e.Stack.IndexerTLS)
	if err != nil {
		return nil
	}
	return causes
}
