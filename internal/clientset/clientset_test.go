package clientset_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/siemctl/siemctl/internal/clientset"
)

type namer interface{ Name() string }

type conn struct{ name string }

func (c *conn) Name() string { return c.name }

func TestGetPresentAndMissing(t *testing.T) {
	c := clientset.Of(&conn{"ix"})
	if got, err := c.Get(); err != nil || got.name != "ix" || !c.OK() || c.Err() != nil {
		t.Fatalf("present: %v %v ok=%v err=%v", got, err, c.OK(), c.Err())
	}
	reason := errors.New("password file /etc/siemctl/ix.pw: no such file")
	m := clientset.New[*conn](nil, reason)
	if got, err := m.Get(); got != nil || !errors.Is(err, reason) || m.OK() {
		t.Fatalf("missing: %v %v ok=%v", got, err, m.OK())
	}
	var zero clientset.Client[*conn]
	if _, err := zero.Get(); !errors.Is(err, clientset.ErrNotConfigured) || zero.OK() {
		t.Fatalf("zero Client: %v", err)
	}
	if _, err := clientset.Missing[*conn](nil).Get(); !errors.Is(err, clientset.ErrNotConfigured) {
		t.Fatalf("Missing(nil): %v", err)
	}
}

func TestAs(t *testing.T) {
	n, err := clientset.As[namer](clientset.Of(&conn{"mgr"})).Get()
	if err != nil || n.Name() != "mgr" {
		t.Fatalf("narrowed: %v %v", n, err)
	}
	reason := errors.New("manager.password_command exited 1")
	m := clientset.As[namer](clientset.Missing[*conn](reason))
	// A missing client stays missing for its reason, never a typed nil
	// inside the interface.
	if n, err := m.Get(); n != nil || !errors.Is(err, reason) {
		t.Fatalf("missing narrowed: %v %v", n, err)
	}
	if _, err := clientset.As[fmt.Stringer](clientset.Of(&conn{})).Get(); err == nil {
		t.Fatal("a type that does not implement the interface narrowed without an error")
	}
}

func TestNeedNamesWhatIsMissing(t *testing.T) {
	reason := errors.New("open /etc/siemctl/indexer.pw: no such file or directory")
	_, err := clientset.Missing[*conn](reason).Need("indexer")
	if err == nil || err.Error() != "indexer: open /etc/siemctl/indexer.pw: no such file or directory" || !errors.Is(err, reason) {
		t.Fatalf("Need = %v", err)
	}
	if c, err := clientset.Of(&conn{"ix"}).Need("indexer"); err != nil || c.name != "ix" {
		t.Fatalf("present: %v %v", c, err)
	}
}
