// Package packaging ships siemctl's systemd units (the snapshot service and
// its hourly timer) and their installer, embedded for tools and tests.
package packaging

import "embed"

// Files holds siemctl-snapshot.service, siemctl-snapshot.timer and install.sh.
//
//go:embed siemctl-snapshot.service siemctl-snapshot.timer install.sh
var Files embed.FS

// Units are the unit file names, service first.
func Units() []string { return []string{"siemctl-snapshot.service", "siemctl-snapshot.timer"} }
