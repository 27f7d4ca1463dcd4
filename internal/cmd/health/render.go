package health

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/health"
	"github.com/siemctl/siemctl/internal/output"
)

// renderTable writes one line per check, then the fixes of the failing ones
// and the verdict. On a TTY status words are coloured.
func renderTable(w io.Writer, rep health.Report, p *output.Palette, tty bool) error {
	t := output.NewTable(w, tty, "status", "check", "summary")
	for _, r := range rep.Results {
		t.Row(p.Status(r.Status.String()), r.ID, r.Summary)
	}
	if err := t.Render(); err != nil {
		return err
	}
	var b strings.Builder
	var fixes []health.Result
	for _, r := range rep.Results {
		if r.Status != health.OK {
			fixes = append(fixes, r)
		}
	}
	if len(fixes) > 0 && tty {
		b.WriteString("\n")
		for _, r := range fixes {
			fmt.Fprintf(&b, "%s %s\n", p.Status(r.Status.String()), p.Bold(r.ID))
			for _, ev := range r.Evidence {
				fmt.Fprintf(&b, "    %s\n", ev)
			}
			if r.Fix != "" {
				fmt.Fprintf(&b, "    fix: %s\n", r.Fix)
			}
		}
	} else if len(fixes) > 0 {
		// Off a TTY keep the output line-oriented and greppable.
		for _, r := range fixes {
			if r.Fix != "" {
				fmt.Fprintf(&b, "fix\t%s\t%s\n", r.ID, r.Fix)
			}
		}
	}
	for _, n := range rep.Notes {
		if tty {
			fmt.Fprintf(&b, "\nnote: %s", n)
		} else {
			fmt.Fprintf(&b, "note\t%s\n", n)
		}
	}
	if tty {
		if len(rep.Notes) > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\n%s %s (%s, %.2fs)\n", p.Bold("verdict:"), p.Status(rep.Verdict.String()), countsLine(rep.Results), rep.Duration.Seconds())
	} else {
		fmt.Fprintf(&b, "verdict\t%s\t%s\n", rep.Verdict, countsLine(rep.Results))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func countsLine(results []health.Result) string {
	c := health.Counts(results)
	parts := []string{fmt.Sprintf("%d checks", len(results))}
	for _, s := range []health.Status{health.Crit, health.Warn, health.Unknown} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], strings.ToLower(s.String())))
		}
	}
	return strings.Join(parts, ", ")
}

// jsonReport is the documented JSON schema (schema_version 1).
type jsonReport struct {
	SchemaVersion int           `json:"schema_version"`
	CheckedAt     string        `json:"checked_at"`
	DurationMS    int64         `json:"duration_ms"`
	Verdict       health.Status `json:"verdict"`
	ExitCode      int           `json:"exit_code"`
	Counts        jsonCounts    `json:"counts"`
	Checks        []jsonResult  `json:"checks"`
	Notes         []string      `json:"notes"`
}

type jsonCounts struct {
	OK      int `json:"ok"`
	Warn    int `json:"warn"`
	Crit    int `json:"crit"`
	Unknown int `json:"unknown"`
}

type jsonResult struct {
	ID         string             `json:"id"`
	Component  string             `json:"component"`
	Status     health.Status      `json:"status"`
	Summary    string             `json:"summary"`
	Evidence   []string           `json:"evidence"`
	Fix        string             `json:"fix"`
	DurationMS int64              `json:"duration_ms"`
	Metrics    map[string]float64 `json:"metrics"`
}

// renderJSON writes the stable JSON document.
func renderJSON(w io.Writer, rep health.Report) error {
	c := health.Counts(rep.Results)
	out := jsonReport{SchemaVersion: 1, CheckedAt: rep.CheckedAt.UTC().Format("2006-01-02T15:04:05Z07:00"),
		DurationMS: rep.Duration.Milliseconds(), Verdict: rep.Verdict, ExitCode: cli.HealthExitCode(rep.Verdict),
		Counts: jsonCounts{OK: c[health.OK], Warn: c[health.Warn], Crit: c[health.Crit], Unknown: c[health.Unknown]},
		Checks: make([]jsonResult, 0, len(rep.Results)), Notes: rep.Notes}
	if out.Notes == nil {
		out.Notes = []string{}
	}
	for _, r := range rep.Results {
		ev := r.Evidence
		if ev == nil {
			ev = []string{}
		}
		m := r.Metrics
		if m == nil {
			m = map[string]float64{}
		}
		out.Checks = append(out.Checks, jsonResult{ID: r.ID, Component: r.Component, Status: r.Status, Summary: r.Summary,
			Evidence: ev, Fix: r.Fix, DurationMS: r.Duration.Milliseconds(), Metrics: m})
	}
	return output.JSON(w, out)
}

// renderNagios writes the plugin format: one status line with perfdata, then
// one long-text line per non-OK check.
func renderNagios(w io.Writer, rep health.Report) error {
	word := map[health.Status]string{health.OK: "OK", health.Warn: "WARNING", health.Crit: "CRITICAL", health.Unknown: "UNKNOWN"}[rep.Verdict]
	var bad []string
	for _, r := range rep.Results {
		if r.Status != health.OK {
			bad = append(bad, r.ID)
		}
	}
	msg := "all checks OK"
	if len(bad) > 0 {
		msg = countsLine(rep.Results) + ": " + strings.Join(bad, ", ")
	}
	c := health.Counts(rep.Results)
	perf := []string{
		fmt.Sprintf("checks=%d", len(rep.Results)), fmt.Sprintf("ok=%d", c[health.OK]), fmt.Sprintf("warn=%d", c[health.Warn]),
		fmt.Sprintf("crit=%d", c[health.Crit]), fmt.Sprintf("unknown=%d", c[health.Unknown]),
		fmt.Sprintf("duration=%.3fs", rep.Duration.Seconds()),
	}
	for _, r := range rep.Results {
		for _, k := range slices.Sorted(maps.Keys(r.Metrics)) {
			perf = append(perf, fmt.Sprintf("'%s_%s'=%s", r.ID, k, strconv.FormatFloat(r.Metrics[k], 'f', -1, 64)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SIEM %s - %s | %s\n", word, nagiosSafe(msg), strings.Join(perf, " "))
	for _, r := range rep.Results {
		if r.Status == health.OK {
			continue
		}
		line := fmt.Sprintf("[%s] %s: %s", r.Status, r.ID, r.Summary)
		if r.Fix != "" {
			line += " (fix: " + r.Fix + ")"
		}
		b.WriteString(nagiosSafe(line) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// nagiosSafe removes the perfdata separator from free text.
func nagiosSafe(s string) string { return strings.ReplaceAll(s, "|", "/") }

// renderPrometheus writes the textfile-collector format.
func renderPrometheus(w io.Writer, rep health.Report) error {
	var b strings.Builder
	b.WriteString("# HELP siemctl_health_check_status Result of a siemctl health check: 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN.\n")
	b.WriteString("# TYPE siemctl_health_check_status gauge\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "siemctl_health_check_status{check=%q,component=%q} %d\n", promLabel(r.ID), promLabel(r.Component), int(r.Status))
	}
	b.WriteString("# HELP siemctl_health_status Overall verdict of siemctl health: 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN.\n")
	b.WriteString("# TYPE siemctl_health_status gauge\n")
	fmt.Fprintf(&b, "siemctl_health_status %d\n", int(rep.Verdict))
	b.WriteString("# HELP siemctl_health_duration_seconds Wall time of the health run.\n")
	b.WriteString("# TYPE siemctl_health_duration_seconds gauge\n")
	fmt.Fprintf(&b, "siemctl_health_duration_seconds %s\n", strconv.FormatFloat(rep.Duration.Seconds(), 'f', 3, 64))
	b.WriteString("# HELP siemctl_health_last_run_timestamp_seconds When the health run started.\n")
	b.WriteString("# TYPE siemctl_health_last_run_timestamp_seconds gauge\n")
	fmt.Fprintf(&b, "siemctl_health_last_run_timestamp_seconds %d\n", rep.CheckedAt.Unix())
	type metric struct {
		check, name string
		v           float64
	}
	var ms []metric
	for _, r := range rep.Results {
		for k, v := range r.Metrics {
			ms = append(ms, metric{r.ID, k, v})
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].name != ms[j].name {
			return ms[i].name < ms[j].name
		}
		return ms[i].check < ms[j].check
	})
	if len(ms) > 0 {
		b.WriteString("# HELP siemctl_health_metric Numeric evidence gathered by a health check.\n")
		b.WriteString("# TYPE siemctl_health_metric gauge\n")
		for _, m := range ms {
			fmt.Fprintf(&b, "siemctl_health_metric{check=%q,name=%q} %s\n", promLabel(m.check), promLabel(m.name), strconv.FormatFloat(m.v, 'f', -1, 64))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// promLabel keeps label values printable; %q then escapes quotes/backslashes
// the way the exposition format expects.
func promLabel(s string) string { return strings.ReplaceAll(s, "\n", " ") }
