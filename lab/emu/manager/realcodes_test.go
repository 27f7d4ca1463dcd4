package manager

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/siemctl/siemctl/internal/wazuhreal"
)

// TestErrorCatalogMatchesReal holds every error message the emulator answers with against the real
// framework's exception codes of v4.9.0 (framework/wazuh/core/exception.py).
func TestErrorCatalogMatchesReal(t *testing.T) {
	var real map[string]string
	if err := json.Unmarshal(wazuhreal.Read(t, "wazuh-v4.9.0", "exception-codes.json"), &real); err != nil {
		t.Fatal(err)
	}
	if _, ok := real["1810"]; !ok {
		t.Error("1810 (the upgrade module's reserved range) is not a real error code")
	}
	for code := range moduleErrors {
		if code < 1810 || code > 1899 {
			t.Errorf("%d: outside the upgrade module's reserved range 1810–1899", code)
		}
	}
	for code, e := range errorCatalog {
		want, ok := real[strconv.Itoa(code)]
		if !ok {
			t.Errorf("%d: not a real error code", code)
			continue
		}
		if e.Message != want {
			t.Errorf("%d: message %q, real %q", code, e.Message, want)
		}
	}
}
