package shipper

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// esClient talks to one indexer host.
type esClient struct {
	base     *url.URL
	user     string
	password string
	tlsConf  *tls.Config
	http     *http.Client
}

func hostURL(o *ESOutput, host string) (*url.URL, error) {
	if !strings.Contains(host, "://") {
		proto := o.Protocol
		if proto == "" {
			proto = "http"
		}
		host = proto + "://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "9200")
	}
	if o.Path != "" {
		u.Path = "/" + strings.Trim(o.Path, "/")
	}
	return u, nil
}

func tlsConfig(o *ESOutput, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS11}
	if len(o.CAs) > 0 {
		pool := x509.NewCertPool()
		for _, ca := range o.CAs {
			b, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("reading certificate_authorities: %w", err)
			}
			if !pool.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("no certificates found in %s", ca)
			}
		}
		cfg.RootCAs = pool
	}
	if o.VerificationMode == "none" {
		cfg.InsecureSkipVerify = true
	}
	return cfg, nil
}

func newESClient(o *ESOutput, host string) (*esClient, error) {
	u, err := hostURL(o, host)
	if err != nil {
		return nil, err
	}
	tc, err := tlsConfig(o, u.Hostname())
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: tc, Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
	return &esClient{base: u, user: o.Username, password: o.Password, tlsConf: tc, http: &http.Client{Transport: tr, Timeout: 90 * time.Second}}, nil
}

// String is how Filebeat names the output in logs: elasticsearch(https://127.0.0.1:9200).
func (c *esClient) String() string { return "elasticsearch(" + c.base.String() + ")" }

func (c *esClient) do(ctx context.Context, method, path string, body []byte, ctype string) (int, []byte, error) {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	if i := strings.IndexByte(path, '?'); i >= 0 {
		u.Path = strings.TrimRight(c.base.Path, "/") + path[:i]
		u.RawQuery = path[i+1:]
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.password)
	}
	if ctype == "" {
		ctype = "application/json"
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "Go-http-client/1.1 (Filebeat/"+BeatVersion+")")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, b, err
}

func (c *esClient) put(ctx context.Context, path string, body []byte) error {
	code, resp, err := c.do(ctx, http.MethodPut, path, body, "")
	if err != nil {
		return err
	}
	if code >= 300 {
		return fmt.Errorf("couldn't load json. Response: %d %s: %s", code, http.StatusText(code), strings.TrimSpace(string(resp)))
	}
	return nil
}

// version queries GET / for version.number.
func (c *esClient) version(ctx context.Context) (string, error) {
	code, b, err := c.do(ctx, http.MethodGet, "/", nil, "")
	if err != nil {
		return "", err
	}
	if code != 200 {
		return "", fmt.Errorf("%d %s: %s", code, http.StatusText(code), strings.TrimSpace(string(b)))
	}
	var r struct {
		Version struct {
			Number string `json:"number"`
		} `json:"version"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("parse response: %w", err)
	}
	return r.Version.Number, nil
}
