package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func newCmdDocs(root *cobra.Command) *cobra.Command {
	markdown := &cobra.Command{
		Use:     "markdown DIR",
		Short:   "Write the command reference as Markdown into DIR: one page per command and an index (README.md)",
		Example: "  siemctl docs markdown docs/commands",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pages, err := MarkdownPages(root)
			if err != nil {
				return fmt.Errorf("write the command reference: %w", err)
			}
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			for name, page := range pages {
				if err := os.WriteFile(filepath.Join(args[0], name), page, 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d pages written to %s\n", len(pages), args[0])
			return nil
		},
	}
	return Group(&cobra.Command{Use: "docs", Short: "Generate documentation"}, markdown, &cobra.Command{
		Use:     "man DIR",
		Short:   "Write one man page per command into DIR (siemctl-health.1, …)",
		Example: "  siemctl docs man /usr/local/share/man/man1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			if err := WriteManPages(root, args[0], nil); err != nil {
				return fmt.Errorf("write man pages: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "man pages written to %s\n", args[0])
			return nil
		},
	})
}

// WriteManPages writes one page per command into dir, named and titled after it
// (siemctl-snapshot-capture.1, SIEMCTL-SNAPSHOT-CAPTURE(1)), each with EXIT STATUS, ENVIRONMENT
// and FILES sections before SEE ALSO. date nil: now, or SOURCE_DATE_EPOCH (reproducible builds).
func WriteManPages(root *cobra.Command, dir string, date *time.Time) error {
	root.DisableAutoGenTag = true
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			if err := walk(sub); err != nil {
				return err
			}
		}
		var buf bytes.Buffer
		// Title empty: cobra titles the page after the command path (SIEMCTL\-HEALTH).
		if err := doc.GenMan(c, &doc.GenManHeader{Section: "1", Source: "siemctl", Manual: "siemctl manual", Date: date}, &buf); err != nil {
			return err
		}
		page := buf.String()
		if i := strings.Index(page, "\n.SH SEE ALSO\n"); i >= 0 {
			page = page[:i+1] + manSections + page[i+1:]
		} else {
			page += manSections
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		return os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644)
	}
	return walk(root)
}

// MarkdownPages is the command reference in Markdown: one page per available
// command, named after its path (siemctl_upgrade_apply.md, as cobra names them,
// linked to each other), and README.md listing every command with its summary.
// The pages carry no generation date, so the same tree gives the same bytes and
// a checked-in copy can be compared with a new one.
func MarkdownPages(root *cobra.Command) (map[string][]byte, error) {
	root.DisableAutoGenTag = true
	pages := map[string][]byte{}
	var index strings.Builder
	index.WriteString("# siemctl command reference\n\nGenerated from the commands' own help (`make docs`; a unit test fails when it is stale).\n" +
		"Exit codes, the environment and the files every command reads: [siemctl](siemctl.md).\n\n")
	var walk func(c *cobra.Command, depth int) error
	walk = func(c *cobra.Command, depth int) error {
		var buf bytes.Buffer
		if err := doc.GenMarkdownCustom(c, &buf, func(s string) string { return s }); err != nil {
			return err
		}
		page := buf.String()
		if c == root {
			page += "\n### Exit codes\n\n```\n" + strings.TrimRight(strings.SplitN(exitCodesHelp, "\n\n", 2)[1], "\n") + "\n```\n"
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
		pages[name] = []byte(page)
		fmt.Fprintf(&index, "%s- [%s](%s) — %s\n", strings.Repeat("  ", depth), c.CommandPath(), name, c.Short)
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			if err := walk(sub, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, 0); err != nil {
		return nil, err
	}
	pages["README.md"] = []byte(index.String())
	return pages, nil
}

// manSections are the sections every page carries (roff).
var manSections = ".SH EXIT STATUS\n.nf\n" + manEscape(strings.TrimRight(strings.SplitN(exitCodesHelp, "\n\n", 2)[1], "\n")) + "\n.fi\n" +
	`.SH ENVIRONMENT
.TP
\fBSIEMCTL_CONFIG\fP
The configuration file when \fB\-\-config\fP is not given (default /etc/siemctl/siemctl.yaml).
.TP
\fBSIEMCTL_PROFILE\fP, \fBSIEMCTL_\fISECTION\fB_\fIKEY\fP
Override the profile and any configuration key (e.g. SIEMCTL_INDEXER_URL); flags override them.
.TP
\fBAPT_CONFIG\fP, \fBDPKG_ROOT\fP
Honoured by the package manager calls (installed versions, upgrades, rollbacks).
.TP
\fBNO_COLOR\fP
Set to a non\-empty value: no colour. \fBTERM\fP=dumb does the same.
.TP
\fBCLICOLOR_FORCE\fP
Set to a value other than 0: colour even when stdout is not a terminal (NO_COLOR and \fB\-\-no\-color\fP win).
.SH FILES
.TP
\fI/etc/siemctl/siemctl.yaml\fP
The configuration (see \fBsiemctl help config\fP).
.TP
\fI/etc/siemctl/secrets/\fP
Password files named by the *_password_file keys (mode 0600; never passed as flags).
.TP
\fI/var/lib/siemctl/\fP
The state directory (state_dir): snapshots, upgrade journals, the host lock.
.TP
\fI/var/backups/siemctl/\fP
Backups taken before an upgrade (backup_dir).
.TP
\fI/usr/lib/systemd/system/siemctl\-snapshot.service\fP, \fIsiemctl\-snapshot.timer\fP
The hourly snapshot of the stack's state (packaged; enable the timer).
`

// manEscape keeps roff from reading a leading dot or quote, or a backslash, as markup.
func manEscape(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\e")
	s = strings.ReplaceAll(s, "-", "\\-")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = "\\&" + l
		}
	}
	return strings.Join(lines, "\n")
}
