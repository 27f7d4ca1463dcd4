package hostfacts

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Real lines (x86-64 little-endian host): header, a LISTEN on 0.0.0.0:2024,
// a TIME_WAIT on 127.0.0.1, IPv6 listeners on [::]:9200 and [::1]:55000,
// UDP bound on 0.0.0.0:514, and a connected UDP socket.
const (
	procTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode                                                     
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1603 1 000000003a79e758 100 0 0 10 0                      
   1: 0100007F:9FEB 0100007F:BA0A 06 00000000:00000000 03:00001278 00000000     0        0 0 3 00000000f5e6567d                                      
   2: 0100007F:15B3 00000000:0000 0A 00000000:00000000 00:00000000 00000000   998        0 22011 1 0000000000000000 100 0 0 10 0
`
	procTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:23F0 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 31337 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:D6D8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   2: 00000000000000000000000001000000:D6D8 00000000000000000000000001000000:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0000000000000000 20 4 30 10 -1
`
	procUDP = `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops            
  100: 00000000:0202 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 5555 2 0000000000000000 0         
  101: 0100007F:E1B0 0100007F:0202 01 00000000:00000000 00:00000000 00000000     0        0 5556 2 0000000000000000 0         
`
)

func TestParseProcNet(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		name    string
		in      string
		proto   string
		want    []Socket
		wantErr bool
	}{
		{"tcp", procTCP, "tcp", []Socket{
			{"tcp", netip.MustParseAddr("0.0.0.0"), 2024, 1603},
			{"tcp", lo, 5555, 22011},
		}, false},
		{"tcp6", procTCP6, "tcp", []Socket{
			{"tcp", netip.MustParseAddr("::"), 9200, 31337},
			{"tcp", netip.MustParseAddr("::1"), 55000, 4242},
		}, false},
		{"udp", procUDP, "udp", []Socket{{"udp", netip.MustParseAddr("0.0.0.0"), 514, 5555}}, false},
		{"header only", "  sl  local_address rem_address   st\n", "tcp", nil, false},
		{"short line", "  sl header\n   0: 00000000:07E8 0A\n", "tcp", nil, true},
		{"bad state", "  sl header\n   0: 00000000:07E8 00000000:0000 ZZ 0 0 0 0 0 1\n", "tcp", nil, true},
		{"bad address", "  sl header\n   0: 0000:07E8 00000000:0000 0A 0 0 0 0 0 1\n", "tcp", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProcNet(strings.NewReader(tt.in), tt.proto)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadListeningFakeProc(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "net"), 0o755)
	os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(procTCP), 0o644)
	os.WriteFile(filepath.Join(root, "net", "udp"), []byte(procUDP), 0o644)
	// no tcp6/udp6: IPv6 disabled is fine
	l, err := ReadListening(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if !l.TCP(2024) || !l.TCP(5555) || l.TCP(9200) || !l.UDP(514) || l.UDP(57776) || l.TCP(514) {
		t.Fatalf("sockets: %+v", l.Sockets)
	}
	if got := l.Ports("tcp"); !reflect.DeepEqual(got, []int{2024, 5555}) {
		t.Fatalf("Ports = %v", got)
	}
	if _, err := ReadListening(context.Background(), t.TempDir()); err == nil {
		t.Fatal("empty proc root accepted")
	}
}

func TestListeningPortsLive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uport := pc.LocalAddr().(*net.UDPAddr).Port
	ctx := context.Background()

	l, err := ListeningPorts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !l.TCP(port) || !l.UDP(uport) {
		t.Fatalf("tcp %d or udp %d not found in %v / %v", port, uport, l.Ports("tcp"), l.Ports("udp"))
	}
	if a := l.Addrs("tcp", port); len(a) != 1 || a[0] != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("Addrs = %v", a)
	}
	if err := Dial(ctx, "127.0.0.1:"+strconv.Itoa(port)); err != nil {
		t.Fatalf("Dial open port: %v", err)
	}

	ln.Close()
	pc.Close()
	l, err = ListeningPorts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.TCP(port) || l.UDP(uport) {
		t.Fatalf("closed ports %d/%d still listed", port, uport)
	}
	if err := Dial(ctx, "127.0.0.1:"+strconv.Itoa(port)); !errors.Is(err, netclient.ErrUnreachable) {
		t.Fatalf("Dial closed port = %v, want ErrUnreachable", err)
	}
}

func TestDisk(t *testing.T) {
	dir := t.TempDir()
	u, err := Disk(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes == 0 || u.Checked != dir || u.UsedPercent < 0 || u.UsedPercent > 100 || u.FreeBytes > u.TotalBytes {
		t.Fatalf("usage = %+v", u)
	}
	missing := filepath.Join(dir, "not", "yet", "there")
	u2, err := Disk(missing)
	if err != nil {
		t.Fatal(err)
	}
	if u2.Path != missing || u2.Checked != dir || u2.TotalBytes != u.TotalBytes {
		t.Fatalf("nearest parent: %+v", u2)
	}
}

func TestUsageFrom(t *testing.T) {
	tests := []struct {
		blocks, bfree, bavail uint64
		want                  float64
	}{
		{100, 50, 50, 50},
		{100, 20, 15, 100 * 80.0 / 95.0}, // df: used/(used+avail), reserved blocks excluded
		{100, 100, 100, 0},
		{0, 0, 0, 0},
	}
	for _, tt := range tests {
		u := usageFrom("/x", "/x", 4096, tt.blocks, tt.bfree, tt.bavail)
		if u.UsedPercent != tt.want || u.TotalBytes != tt.blocks*4096 || u.FreeBytes != tt.bavail*4096 {
			t.Errorf("usageFrom(%d,%d,%d) = %+v, want %.2f%%", tt.blocks, tt.bfree, tt.bavail, u, tt.want)
		}
	}
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test root CA"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return testCA{c, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca testCA) leaf(t *testing.T, cn string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func serveTLS(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

func TestCertExpiry(t *testing.T) {
	ca := newCA(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, ca.pem, 0o644)
	now := time.Now()
	valid := serveTLS(t, ca.leaf(t, "valid", now.Add(-time.Hour), now.Add(365*24*time.Hour)))
	soon := serveTLS(t, ca.leaf(t, "soon", now.Add(-time.Hour), now.Add(10*24*time.Hour+time.Hour)))
	expired := serveTLS(t, ca.leaf(t, "expired", now.Add(-30*24*time.Hour), now.Add(-24*time.Hour)))
	ctx := context.Background()

	tests := []struct {
		name       string
		addr       string
		opts       netclient.TLSOptions
		verified   bool
		verifyErr  string
		expired    bool
		daysLeftGE int
		daysLeftLE int
	}{
		{"valid with CA", valid, netclient.TLSOptions{CAFile: caFile}, true, "", false, 360, 365},
		{"10 days", soon, netclient.TLSOptions{CAFile: caFile}, true, "", false, 10, 10},
		{"expired still read", expired, netclient.TLSOptions{CAFile: caFile}, false, "expired", true, -2, -1},
		{"unknown CA", valid, netclient.TLSOptions{}, false, "unknown authority", false, 360, 365},
		{"wrong name", valid, netclient.TLSOptions{CAFile: caFile, ServerName: "indexer.example"}, false, "indexer.example", false, 360, 365},
		{"insecure", expired, netclient.TLSOptions{Insecure: true}, false, "", true, -2, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ci, err := CertExpiry(ctx, tt.addr, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if ci.Verified != tt.verified || !strings.Contains(ci.VerifyError, tt.verifyErr) || (tt.verifyErr == "" && ci.VerifyError != "") {
				t.Fatalf("verified=%v err=%q", ci.Verified, ci.VerifyError)
			}
			if ci.Expired(now) != tt.expired || ci.DaysLeft(now) < tt.daysLeftGE || ci.DaysLeft(now) > tt.daysLeftLE {
				t.Fatalf("expired=%v daysLeft=%d (NotAfter %v)", ci.Expired(now), ci.DaysLeft(now), ci.NotAfter)
			}
			if !strings.Contains(ci.Issuer, "test root CA") || ci.Subject == "" || ci.Insecure != tt.opts.Insecure {
				t.Fatalf("info = %+v", ci)
			}
		})
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	if _, err := CertExpiry(ctx, closed, netclient.TLSOptions{}); !errors.Is(err, netclient.ErrUnreachable) {
		t.Fatalf("closed port = %v", err)
	}
	if _, err := CertExpiry(ctx, valid, netclient.TLSOptions{CAFile: filepath.Join(t.TempDir(), "missing.pem")}); err == nil {
		t.Fatal("missing CA file accepted")
	}
}

func TestPEMExpiry(t *testing.T) {
	ca := newCA(t)
	now := time.Now()
	leaf := ca.leaf(t, "node", now.Add(-time.Hour), now.Add(10*24*time.Hour+time.Hour))
	dir := t.TempDir()
	bundle := filepath.Join(dir, "node.pem")
	data := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Certificate[0]}), ca.pem...)
	data = append([]byte("# comment\n"), data...)
	os.WriteFile(bundle, data, 0o644)
	got, err := PEMExpiry(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Subject != "CN=node" || got[0].DaysLeft(now) != 10 || got[1].Subject != "CN=test root CA" || got[0].Source != bundle {
		t.Fatalf("PEMExpiry = %+v", got)
	}
	key := filepath.Join(dir, "key.pem")
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2}}), 0o600)
	if _, err := PEMExpiry(key); err == nil {
		t.Fatal("key file accepted as certificate")
	}
	if _, err := PEMExpiry(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func FuzzParseProcNet(f *testing.F) {
	f.Add(procTCP, true)
	f.Add(procTCP6, true)
	f.Add(procUDP, false)
	f.Fuzz(func(t *testing.T, s string, tcp bool) {
		proto := "udp"
		if tcp {
			proto = "tcp"
		}
		socks, err := ParseProcNet(strings.NewReader(s), proto)
		if err != nil {
			return
		}
		for _, so := range socks {
			if so.Port <= 0 || so.Port > 65535 || !so.Addr.IsValid() {
				t.Fatalf("bad socket %+v", so)
			}
		}
	})
}
