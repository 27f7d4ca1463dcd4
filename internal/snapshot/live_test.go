package snapshot

import (
	"errors"
	"sync/atomic"
	"testing"
)

// The identity call's error comes back apart from the parts' errors, after every call has
// finished: a component whose GET / fails is down whatever its parts answered.
func TestPartsWaitForIdentityAndParts(t *testing.T) {
	down := errors.New("connection refused")
	forbidden := errors.New("403 forbidden")
	var finished atomic.Int32
	var p parts
	p.identity(func() error { finished.Add(1); return down })
	p.run("templates", func() error { finished.Add(1); return forbidden })
	p.run("indices", func() error { finished.Add(1); return nil })
	errs, err := p.wait()
	if n := finished.Load(); n != 3 {
		t.Fatalf("wait returned after %d of 3 calls", n)
	}
	if !errors.Is(err, down) {
		t.Errorf("identity error = %v, want %v", err, down)
	}
	if len(errs) != 1 || !errors.Is(errs["templates"], forbidden) {
		t.Errorf("part errors = %v, want only templates", errs)
	}

	var up parts
	up.identity(func() error { return nil })
	up.run("health", func() error { return nil })
	if errs, err := up.wait(); err != nil || errs != nil {
		t.Errorf("all answered: errs %v, identity %v", errs, err)
	}
}

func TestConcurrentlyJoinsEveryError(t *testing.T) {
	a, b := errors.New("legacy templates: 500"), errors.New("index templates: 403")
	var ran atomic.Int32
	err := concurrently(
		func() error { ran.Add(1); return a },
		func() error { ran.Add(1); return nil },
		func() error { ran.Add(1); return b },
	)
	if ran.Load() != 3 || !errors.Is(err, a) || !errors.Is(err, b) {
		t.Fatalf("ran %d, err %v: want all three run and both errors", ran.Load(), err)
	}
	if err := concurrently(func() error { return nil }); err != nil {
		t.Fatalf("no error: got %v", err)
	}
}
