package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// QueueSocket is analysisd's input socket (queue/sockets/queue, DEFAULTQUEUE in src/headers/defs.h):
// a unix datagram socket the local components (logcollector, syscheckd, remoted for agent events)
// write "<queue id>:<location>:<log line>" messages to.
func (h Home) QueueSocket() string { return h.Path("queue", "sockets", "queue") }

// maxUnixPath is the room for a socket path in sockaddr_un.sun_path (108 bytes with the NUL).
const maxUnixPath = 107

// ErrQueueMessage is a datagram that is not "<id>:<location>:<message>".
var ErrQueueMessage = errors.New("malformed queue message")

// ParseQueueMessage splits a message of analysisd's queue as OS_CleanMSG does (src/analysisd/cleanevent.c):
// one queue id character (LOCALFILE_MQ '1', SYSLOG_MQ '2', …), ':', the location up to the next ':'
// (for an agent's event "(name) ip->location", up to the first ':' after "->"), ':', the log line,
// which is then pre-decoded like a syslog line.
func ParseQueueMessage(raw string) (Event, error) {
	msg := strings.TrimRight(raw, "\x00\r\n")
	if len(msg) < 4 || msg[1] != ':' {
		return Event{}, fmt.Errorf("%w: %.40q", ErrQueueMessage, msg)
	}
	rest := msg[2:]
	from := 0
	if strings.HasPrefix(rest, "(") || strings.HasPrefix(rest, "[") {
		if i := strings.Index(rest, "->"); i >= 0 {
			from = i + 2
		}
	}
	i := strings.IndexByte(rest[from:], ':')
	if i < 0 {
		return Event{}, fmt.Errorf("%w: no location in %.40q", ErrQueueMessage, msg)
	}
	location, line := rest[:from+i], rest[from+i+1:]
	if location == "" || line == "" {
		return Event{}, fmt.Errorf("%w: empty location or log in %.40q", ErrQueueMessage, msg)
	}
	ev := ParseSyslog(line)
	ev.Location = location
	if j := strings.Index(location, "->"); j >= 0 && from > 0 {
		ev.Location = location[j+2:]
	}
	return ev, nil
}

// listenQueue binds the queue socket (a stale one from a killed daemon is replaced), mode 0660 as
// analysisd leaves it.
func listenQueue(h Home) (*net.UnixConn, error) {
	p := h.QueueSocket()
	if len(p) > maxUnixPath {
		return nil, fmt.Errorf("queue socket path %s is %d bytes, longer than a unix socket path can be (%d)", p, len(p), maxUnixPath)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return nil, fmt.Errorf("queue socket dir: %w", err)
	}
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("queue socket %s exists and is not a socket", p)
		}
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("remove stale queue socket: %w", err)
		}
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("bind queue socket: %w", err)
	}
	if err := os.Chmod(p, 0o660); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("queue socket mode: %w", err)
	}
	return c, nil
}

// serveQueue analyses each message of the queue socket until the connection is closed. A failed
// analysisd (var/run/wazuh-analysisd.failed, what the lab's analysisd-failed fault leaves) reads
// nothing: the events are lost, as they are while the real daemon is down.
func serveQueue(ctx context.Context, c *net.UnixConn, h Home, an *Analyzer, olog *ossecLog) {
	failed := filepath.Join(h.RunDir(), confDaemon+".failed")
	eachPacket(ctx, c, func(msg []byte, _ net.Addr) {
		if exists(failed) {
			return
		}
		ev, err := ParseQueueMessage(string(msg))
		if err != nil {
			olog.write(confDaemon, "WARNING", err.Error())
			return
		}
		if _, err := an.Process(ev); err != nil {
			olog.write(confDaemon, "ERROR", err.Error())
		}
	})
}
