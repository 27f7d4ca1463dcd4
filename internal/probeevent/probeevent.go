// Package probeevent is the data-flow probe's event on the wire: the sshd line
// that carries the probe's nonce and the syslog datagram around it. It is the
// one contract between siemctl's probe (internal/ops/probe), which sends it and
// judges where it got to, and the lab's traffic (siemlab flow), which sends the
// same event at a steady rate: both build it here, and neither judges with the
// other's code.
package probeevent

import (
	"fmt"
	"strings"
	"time"
)

// UserPrefix starts the invalid user name that carries the nonce.
const UserPrefix = "siemctl-probe-"

// Message is the sshd line the probe sends (without the syslog header).
func Message(nonce string, host byte, port int) string {
	return fmt.Sprintf("Failed password for invalid user %s%s from 192.0.2.%d port %d ssh2", UserPrefix, nonce, host, port)
}

// Frame builds the RFC 3164 datagram: <38> is auth.info, the facility and
// severity sshd logs failed logins with; the tag is sshd.
func Frame(ts time.Time, hostname, msg string) string {
	if hostname == "" || strings.ContainsAny(hostname, " \t") {
		hostname = "localhost"
	}
	return "<38>" + ts.Format(time.Stamp) + " " + hostname + " sshd: " + msg
}
