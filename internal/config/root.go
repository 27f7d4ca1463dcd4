package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/viper"
)

// MaxPortOffset bounds port_offset (the highest default port, 55000, must
// stay a port; larger offsets are refused by the per-key check as well).
const MaxPortOffset = 60000

// portKeys are the defaults that carry a port: port_offset is added to them.
// URL keys keep their scheme and host; an URL without a port gets the
// scheme's default port plus the offset.
var portKeys = []string{"indexer.url", "manager.api_url", "dashboard.url", "manager.syslog", "manager.agent_port", "manager.enrollment_port"}

// schemePorts are the ports an URL without one means.
var schemePorts = map[string]int{"https": 443, "http": 80, "udp": 514, "tcp": 514}

// applyRootAndOffset moves every value that still is the profile's default:
// a default that is an absolute path (a string, or an argv element) is put
// under root, and the ports of portKeys are shifted by port_offset. Values
// from the file, the environment or a flag are taken as given. The origin
// of a moved value says so ("profile wazuh + root").
func applyRootAndOffset(v *viper.Viper, defaults map[string]any, origins map[string]string) error {
	root, err := configRoot(v.Get("root"))
	if err != nil {
		return err
	}
	offset, err := portOffset(v.Get("port_offset"))
	if err != nil {
		return err
	}
	v.Set("root", root)
	v.Set("port_offset", offset)
	isDefault := func(k string) bool { return strings.HasPrefix(origins[k], "profile ") }
	for k, def := range flatten("", defaults) {
		if root == "" || !isDefault(k) {
			continue
		}
		switch d := def.(type) {
		case string:
			if filepath.IsAbs(d) {
				v.Set(k, filepath.Join(root, d))
				origins[k] += " + root"
			}
		case []string:
			moved, changed := make([]string, len(d)), false
			for i, e := range d {
				moved[i] = e
				if filepath.IsAbs(e) {
					moved[i], changed = filepath.Join(root, e), true
				}
			}
			if changed {
				v.Set(k, moved)
				origins[k] += " + root"
			}
		}
	}
	if offset == 0 {
		return nil
	}
	for _, k := range portKeys {
		def, ok := flatten("", defaults)[k]
		if !ok || !isDefault(k) {
			continue
		}
		switch d := def.(type) {
		case int:
			if d+offset > 65535 {
				return &Error{Key: "port_offset", Msg: fmt.Sprintf("%d moves %s to port %d, beyond 65535; use a smaller offset or set %s explicitly", offset, k, d+offset, k)}
			}
			v.Set(k, d+offset)
		case string:
			if d == "" {
				continue // nothing to shift (no syslog listener by default)
			}
			moved, port, err := shiftURL(d, offset)
			if err != nil {
				return &Error{Key: "port_offset", Msg: fmt.Sprintf("%d cannot move %s: %v", offset, k, err)}
			}
			if port > 65535 {
				return &Error{Key: "port_offset", Msg: fmt.Sprintf("%d moves %s to port %d, beyond 65535; use a smaller offset or set %s explicitly", offset, k, port, k)}
			}
			v.Set(k, moved)
		default:
			continue
		}
		origins[k] += " + port_offset"
	}
	return nil
}

func configRoot(raw any) (string, error) {
	root, _ := raw.(string)
	if root == "" {
		return "", nil
	}
	if !filepath.IsAbs(root) {
		return "", &Error{Key: "root", Msg: fmt.Sprintf("%q must be an absolute path (the directory every default path is put under, like DPKG_ROOT), or empty", root)}
	}
	root = filepath.Clean(root)
	if root == "/" {
		return "", nil
	}
	fi, err := os.Stat(root)
	switch {
	case err != nil:
		return "", &Error{Key: "root", Msg: fmt.Sprintf("%s: %v (create it, or fix root)", root, unwrapPathErr(err))}
	case !fi.IsDir():
		return "", &Error{Key: "root", Msg: fmt.Sprintf("%s is not a directory (root is the directory every default path is put under)", root)}
	}
	return root, nil
}

func portOffset(raw any) (int, error) {
	var n int
	switch x := raw.(type) {
	case nil:
		return 0, nil
	case int:
		n = x
	case int64:
		n = int(x)
	case float64:
		if x != float64(int(x)) {
			return 0, &Error{Key: "port_offset", Msg: fmt.Sprintf("%v is not a whole number of ports", x)}
		}
		n = int(x)
	case string:
		if strings.TrimSpace(x) == "" {
			return 0, nil
		}
		v, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, &Error{Key: "port_offset", Msg: fmt.Sprintf("%q is not a number (the amount added to every default port, 0 to %d)", x, MaxPortOffset)}
		}
		n = v
	default:
		return 0, &Error{Key: "port_offset", Msg: fmt.Sprintf("%v is not a number (the amount added to every default port, 0 to %d)", raw, MaxPortOffset)}
	}
	if n < 0 || n > MaxPortOffset {
		return 0, &Error{Key: "port_offset", Msg: fmt.Sprintf("%d is outside 0 to %d (the amount added to every default port)", n, MaxPortOffset)}
	}
	return n, nil
}

// shiftURL adds offset to the port of raw (the scheme's default port when
// raw names none) and returns the new URL and port.
func shiftURL(raw string, offset int) (string, int, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", 0, fmt.Errorf("%q is not an URL", raw)
	}
	port := schemePorts[u.Scheme]
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return "", 0, fmt.Errorf("%q has no numeric port", raw)
		}
	}
	if port == 0 {
		return "", 0, fmt.Errorf("%q has no port", raw)
	}
	u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(port+offset))
	return u.String(), port + offset, nil
}
