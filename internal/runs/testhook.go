//go:build !e2e

package runs

import "github.com/siemctl/siemctl/internal/engine"

// testHook is nil outside e2e test builds.
func testHook() func(engine.Progress) { return nil }
