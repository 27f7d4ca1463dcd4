package lab

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// indexerClient talks to the lab's OpenSearch over HTTPS with basic auth (TLS verified with the lab CA).
type indexerClient struct {
	base     string
	user     string
	password string
	hc       *http.Client
	pause    time.Duration // the first pause before a refused request is sent again (retryRefused); 0: 0.5 s
}

func tlsClient(caFile string, timeout time.Duration) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, DisableKeepAlives: true}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// managerAPIURL is the manager API's base URL: https://localhost:<port> when the API has its own
// certificate (its SAN is localhost only, as on a stock Wazuh host), else the loopback address.
func (l *Lab) managerAPIURL() string {
	host := "127.0.0.1"
	switch {
	case l.st.Address != "":
		host = l.st.Address // a distributed lab's host: the API certificate names its address
	case !l.prof.APICertFromCA:
		host = "localhost"
	}
	return fmt.Sprintf("https://%s:%d", host, l.st.Ports.API)
}

// managerAPIClient verifies the manager API against its server.crt (which exists once the API
// started at least once).
func (l *Lab) managerAPIClient() (*http.Client, error) {
	return tlsClient(l.apiCertPath(), 10*time.Second)
}

func (l *Lab) indexer() (*indexerClient, error) {
	pw, err := l.readSecret(secretIndexer)
	if err != nil {
		return nil, err
	}
	hc, err := tlsClient(filepath.Join(l.st.Dir, "certs", "root-ca.pem"), 90*time.Second)
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", l.st.Ports.Indexer)
	if len(l.st.IndexerURLs) > 0 {
		base = l.st.IndexerURLs[0] // a distributed lab's host: its own node, else the first node
	}
	return &indexerClient{base: base, user: "admin", password: pw, hc: hc}, nil
}

// do sends a request; body may be nil, []byte or a value to encode as JSON. It returns the status
// and body; only transport failures are errors.
func (c *indexerClient) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return 0, nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.SetBasicAuth(c.user, c.password)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return resp.StatusCode, data, nil
}

// ok is do with a 2xx requirement.
func (c *indexerClient) ok(ctx context.Context, method, path string, body any) ([]byte, error) {
	code, data, err := c.do(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if code/100 != 2 {
		return data, fmt.Errorf("%s %s: HTTP %d: %s", method, path, code, tail(string(data), 300))
	}
	return data, nil
}

// createIndex creates index with PUT /index?query (query and body may be empty); an index that
// exists already is no failure.
func (c *indexerClient) createIndex(ctx context.Context, index, query string, body any) error {
	path := "/" + index
	if query != "" {
		path += "?" + query
	}
	code, data, err := c.do(ctx, http.MethodPut, path, body)
	if err != nil {
		return fmt.Errorf("create %s: %w", index, err)
	}
	if code/100 != 2 && !strings.Contains(string(data), "resource_already_exists_exception") {
		return fmt.Errorf("create %s: HTTP %d: %s", index, code, tail(string(data), 300))
	}
	return nil
}

// deleteIndex deletes index; one that does not exist is no failure.
func (c *indexerClient) deleteIndex(ctx context.Context, index string) error {
	code, data, err := c.do(ctx, http.MethodDelete, "/"+index, nil)
	if err != nil {
		return err
	}
	if code/100 != 2 && code != http.StatusNotFound {
		return fmt.Errorf("delete %s: HTTP %d: %s", index, code, tail(string(data), 300))
	}
	return nil
}

// ClusterHealth is the part of _cluster/health the lab reports.
type ClusterHealth struct {
	Status              string `json:"status"`
	NumberOfNodes       int    `json:"number_of_nodes"`
	ActiveShards        int    `json:"active_shards"`
	UnassignedShards    int    `json:"unassigned_shards"`
	InitializingShards  int    `json:"initializing_shards"`
	RelocatingShards    int    `json:"relocating_shards"`
	ActivePrimaryShards int    `json:"active_primary_shards"`
}

func (c *indexerClient) health(ctx context.Context, query string) (ClusterHealth, error) {
	var h ClusterHealth
	code, data, err := c.do(ctx, http.MethodGet, "/_cluster/health"+query, nil)
	if err != nil {
		return h, err
	}
	if code != http.StatusOK && code != http.StatusRequestTimeout {
		return h, fmt.Errorf("cluster health: HTTP %d: %s", code, tail(string(data), 200))
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return h, fmt.Errorf("cluster health: %w", err)
	}
	return h, nil
}

// poll calls f, then again after each pause of interval, until f says done (nil), f fails (its
// error) or ctx ends during a pause (ctx.Err()).
func poll(ctx context.Context, interval time.Duration, f func() (bool, error)) error {
	for {
		if done, err := f(); err != nil || done {
			return err
		}
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
