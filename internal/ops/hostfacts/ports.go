// Package hostfacts reads facts about the local host: listening TCP/UDP
// ports (from /proc/net, with a dial fallback), disk usage of a path,
// certificate expiry of a TLS endpoint or a PEM file (and of every
// component's endpoint and CA file), and the dashboard's status answer. It
// also holds the "ports missing" verdict (Expected, JudgePorts) that the
// health check "ports" and the upgrade gate gate.ports both map.
package hostfacts

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Socket is one listening (TCP) or bound, unconnected (UDP) socket.
type Socket struct {
	Proto string     `json:"proto"` // tcp | udp
	Addr  netip.Addr `json:"addr"`  // local address (0.0.0.0 / :: for any)
	Port  int        `json:"port"`
	Inode uint64     `json:"inode"`
}

// Listening is the set of listening sockets of the host (its network
// namespace).
type Listening struct {
	Sockets []Socket `json:"sockets"`
}

// TCP reports whether some socket listens on TCP port p (any address).
func (l Listening) TCP(p int) bool { return l.has("tcp", p) }

// UDP reports whether some socket is bound to UDP port p (any address).
func (l Listening) UDP(p int) bool { return l.has("udp", p) }

func (l Listening) has(proto string, p int) bool {
	for _, s := range l.Sockets {
		if s.Proto == proto && s.Port == p {
			return true
		}
	}
	return false
}

// Ports returns the sorted distinct ports of proto.
func (l Listening) Ports(proto string) []int {
	var out []int
	for _, s := range l.Sockets {
		if s.Proto == proto && !slices.Contains(out, s.Port) {
			out = append(out, s.Port)
		}
	}
	slices.Sort(out)
	return out
}

// Addrs returns the local addresses listening on proto/port.
func (l Listening) Addrs(proto string, port int) []netip.Addr {
	var out []netip.Addr
	for _, s := range l.Sockets {
		if s.Proto == proto && s.Port == port {
			out = append(out, s.Addr)
		}
	}
	return out
}

// ListeningTCP is the set of listening TCP ports.
func ListeningTCP(ctx context.Context) (map[int]bool, error) {
	l, err := ListeningPorts(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int]bool{}
	for _, p := range l.Ports("tcp") {
		out[p] = true
	}
	return out, nil
}

// ListeningPorts reads /proc/net/{tcp,tcp6,udp,udp6}.
func ListeningPorts(ctx context.Context) (Listening, error) {
	return ReadListening(ctx, "/proc")
}

// ReadListening reads the listening sockets under procRoot (normally
// /proc). Missing tcp6/udp6 files (IPv6 disabled) are not an error.
func ReadListening(ctx context.Context, procRoot string) (Listening, error) {
	var l Listening
	read := 0
	for _, f := range []struct {
		name, proto string
	}{{"tcp", "tcp"}, {"tcp6", "tcp"}, {"udp", "udp"}, {"udp6", "udp"}} {
		if err := ctx.Err(); err != nil {
			return l, err
		}
		fh, err := os.Open(filepath.Join(procRoot, "net", f.name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return l, fmt.Errorf("listening ports: %w", err)
		}
		socks, err := ParseProcNet(fh, f.proto)
		fh.Close()
		if err != nil {
			return l, fmt.Errorf("listening ports: %s: %w", f.name, err)
		}
		read++
		l.Sockets = append(l.Sockets, socks...)
	}
	if read == 0 {
		return l, fmt.Errorf("listening ports: no %s/net/tcp* or udp* files", procRoot)
	}
	if l.Sockets == nil {
		l.Sockets = []Socket{}
	}
	return l, nil
}

const (
	tcpListen = 0x0A // TCP_LISTEN
	udpClose  = 0x07 // TCP_CLOSE: an unconnected, bound UDP socket
)

// ParseProcNet parses one /proc/net/{tcp,tcp6,udp,udp6} file and returns
// the TCP sockets in LISTEN state or the UDP sockets bound and not connected.
func ParseProcNet(r io.Reader, proto string) ([]Socket, error) {
	var out []Socket
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	first := true
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if first {
			first = false
			if strings.HasPrefix(line, "sl") {
				continue
			}
		}
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
			return nil, fmt.Errorf("malformed line %q", line)
		}
		state, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("state in %q: %w", line, err)
		}
		switch proto {
		case "tcp":
			if state != tcpListen {
				continue
			}
		case "udp":
			if state != udpClose {
				continue
			}
			if _, rport, err := parseHostPort(f[2]); err != nil || rport != 0 {
				continue
			}
		default:
			return nil, fmt.Errorf("unknown proto %q", proto)
		}
		addr, port, err := parseHostPort(f[1])
		if err != nil {
			return nil, fmt.Errorf("local address in %q: %w", line, err)
		}
		if port == 0 {
			continue
		}
		inode, _ := strconv.ParseUint(f[9], 10, 64)
		out = append(out, Socket{Proto: proto, Addr: addr, Port: port, Inode: inode})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseHostPort decodes "0100007F:1F90" or a 32-hex-digit IPv6 address.
// The kernel prints each 32-bit word of the address in host byte order.
func parseHostPort(s string) (netip.Addr, int, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.Addr{}, 0, fmt.Errorf("no port in %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("port %q: %w", p, err)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.Addr{}, 0, fmt.Errorf("address %q", h)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr, int(port), nil
}

// Dial checks that a TCP connection to addr ("host:port") succeeds, as a
// fallback when /proc is not readable or the port is in another network
// namespace. Failures are *netclient.Error (ErrUnreachable, ErrTimeout).
func Dial(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: 3 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return netclient.Classify("dial", "tcp://"+addr, err)
	}
	return c.Close()
}
