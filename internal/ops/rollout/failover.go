package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/renameio/v2"

	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
)

// NodesFile is the file in state_dir that keeps the indexer nodes' HTTP addresses learned from
// _nodes/http, for reaching the record when indexer.url does not answer.
const NodesFile = "indexer-nodes.json"

// Failover is an API that reaches the record through indexer.url (Primary) and, when that node
// does not answer (unreachable, timed out, 503), through the other nodes in order: the ones learned
// from _nodes/http the last time the cluster answered (Nodes). A conditional write that timed out
// is not sent again elsewhere (it may have landed: the next read tells).
type Failover struct {
	Primary    API
	PrimaryURL string
	// Nodes are the other nodes to try, in order (a node at PrimaryURL is skipped).
	Nodes []indexer.NodeHTTP
	// Dial returns a client of the node at a base URL (same credentials, TLS settings and CA).
	Dial func(url string) (API, error)
	// Learn, when set, is called once after the primary first answers: it lists the nodes
	// (GET _nodes/http), which replace Nodes and are passed to Keep.
	Learn func(ctx context.Context) ([]indexer.NodeHTTP, error)
	Keep  func([]indexer.NodeHTTP) error

	mu       sync.Mutex
	learned  bool
	answered string // the node that answered the last call when it was not the primary
	dialed   map[string]API
}

// NewFailover is the record's API over ix (this host's indexer client: indexer.url) that falls back
// to the other nodes: those kept in stateDir, learned again from _nodes/http (when ix lists them)
// whenever ix answers, each reached with dial (same credentials, TLS settings and CA).
func NewFailover(ix API, stateDir string, dial func(url string) (API, error)) *Failover {
	fo := &Failover{Primary: ix, Nodes: LoadNodes(stateDir), Dial: dial,
		Keep: func(n []indexer.NodeHTTP) error { return SaveNodes(stateDir, n) }}
	if u, ok := ix.(interface{ URL() string }); ok {
		fo.PrimaryURL = u.URL()
	}
	if l, ok := ix.(interface {
		HTTPNodes(context.Context) ([]indexer.NodeHTTP, error)
	}); ok {
		fo.Learn = l.HTTPNodes
	}
	return fo
}

// Over is NewFailover for an *indexer.Client, which reaches another node itself (Client.At); any
// other API (a test's fake) is returned as it is.
func Over(ix API, stateDir string) API {
	c, ok := ix.(*indexer.Client)
	if !ok {
		return ix
	}
	return NewFailover(c, stateDir, func(u string) (API, error) {
		n, err := c.At(u)
		if err != nil {
			return nil, err
		}
		return n, nil
	})
}

// Answered names the node (name and URL) that answered the last call when it was not indexer.url;
// "" when indexer.url did.
func (f *Failover) Answered() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answered
}

// GetDocument reads through the first node that answers.
func (f *Failover) GetDocument(ctx context.Context, index, id string) (indexer.Document, error) {
	var doc indexer.Document
	err := f.do(ctx, true, func(api API) (err error) { doc, err = api.GetDocument(ctx, index, id); return err })
	return doc, err
}

// PutDocument writes through the first node that answers.
func (f *Failover) PutDocument(ctx context.Context, index, id string, v any, cond indexer.Condition) (indexer.Document, error) {
	var doc indexer.Document
	err := f.do(ctx, false, func(api API) (err error) { doc, err = api.PutDocument(ctx, index, id, v, cond); return err })
	return doc, err
}

// EnsureIndex creates the index through the first node that answers.
func (f *Failover) EnsureIndex(ctx context.Context, name string, body []byte) (bool, error) {
	var created bool
	err := f.do(ctx, false, func(api API) (err error) { created, err = api.EnsureIndex(ctx, name, body); return err })
	return created, err
}

// unanswered: the node did not take the request (or, for a read, did not answer in time).
func unanswered(err error, read bool) bool {
	if errors.Is(err, netclient.ErrUnreachable) || errors.Is(err, netclient.ErrNotReady) {
		return true
	}
	return read && errors.Is(err, netclient.ErrTimeout)
}

func (f *Failover) do(ctx context.Context, read bool, call func(API) error) error {
	err := call(f.Primary)
	if err == nil || !unanswered(err, read) || ctx.Err() != nil {
		if err == nil {
			f.learn(ctx)
		}
		f.setAnswered("")
		return err
	}
	errs := []error{err}
	f.mu.Lock()
	nodes := append([]indexer.NodeHTTP(nil), f.Nodes...)
	f.mu.Unlock()
	for _, n := range nodes {
		if n.URL == "" || sameURL(n.URL, f.PrimaryURL) || f.Dial == nil {
			continue
		}
		api, derr := f.dial(n.URL)
		if derr != nil {
			errs = append(errs, derr)
			continue
		}
		err := call(api)
		// A certificate that does not cover the published address is that node's problem: next.
		if err == nil || !unanswered(err, read) && !errors.Is(err, netclient.ErrTLS) {
			f.setAnswered(n.Name + " (" + n.URL + ")")
			return err
		}
		errs = append(errs, fmt.Errorf("also tried %s: %w", n.Name, err))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 && len(nodes) == 0 {
		return fmt.Errorf("%w (no other indexer node known on this host: siemctl learns them from _nodes/http into state_dir/%s whenever indexer.url answers)", err, NodesFile)
	}
	return errors.Join(errs...)
}

func (f *Failover) dial(u string) (API, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if api, ok := f.dialed[u]; ok {
		return api, nil
	}
	api, err := f.Dial(u)
	if err != nil {
		return nil, err
	}
	if f.dialed == nil {
		f.dialed = map[string]API{}
	}
	f.dialed[u] = api
	return api, nil
}

func (f *Failover) setAnswered(who string) {
	f.mu.Lock()
	f.answered = who
	f.mu.Unlock()
}

// learn refreshes Nodes once per Failover, best effort (the record's call already succeeded).
func (f *Failover) learn(ctx context.Context) {
	f.mu.Lock()
	if f.learned || f.Learn == nil {
		f.mu.Unlock()
		return
	}
	f.learned = true
	f.mu.Unlock()
	nodes, err := f.Learn(ctx)
	if err != nil || len(nodes) == 0 {
		return
	}
	f.mu.Lock()
	f.Nodes = nodes
	f.mu.Unlock()
	if f.Keep != nil {
		_ = f.Keep(nodes)
	}
}

func sameURL(a, b string) bool {
	return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}

// LoadNodes reads state_dir/indexer-nodes.json (nil when absent or unreadable: the nodes are only
// a fallback, learned again whenever the cluster answers).
func LoadNodes(stateDir string) []indexer.NodeHTTP {
	if stateDir == "" {
		return nil
	}
	path := filepath.Join(stateDir, NodesFile)
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var nodes []indexer.NodeHTTP
	if json.Unmarshal(data, &nodes) != nil {
		return nil
	}
	return nodes
}

// SaveNodes writes state_dir/indexer-nodes.json when it changed: a new file renamed over the
// old one (never written through a symlink), in a state_dir that is a directory, not a symlink.
func SaveNodes(stateDir string, nodes []indexer.NodeHTTP) error {
	if stateDir == "" {
		return nil
	}
	data, err := json.MarshalIndent(nodes, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(stateDir); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symlink is not followed)", stateDir)
	}
	path := filepath.Join(stateDir, NodesFile)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			return nil
		}
	}
	return renameio.WriteFile(path, data, 0o600)
}
