package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// EnvName is the environment variable that overrides key (dotted):
// indexer.url → SIEMCTL_INDEXER_URL.
func EnvName(key string) string {
	return "SIEMCTL_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// ownEnv are siemctl's SIEMCTL_* variables that are not config keys.
var ownEnv = []string{"SIEMCTL_CONFIG", "SIEMCTL_PROFILE", "SIEMCTL_HASH_PASSWORD"}

// harnessEnvPrefixes are the test harness's variables (make test-e2e,
// integration tests), never read by the product.
var harnessEnvPrefixes = []string{"SIEMCTL_IT_", "SIEMCTL_E2E_", "SIEMCTL_TEST_", "SIEMCTL_SNAPSHOT_"}

// unknownEnv returns a warning for every SIEMCTL_* variable in env that is
// no configuration key (a typo is otherwise silently ignored), naming the
// nearest key. keys are the dotted config keys; also are further names
// that are fine (the password_env variables the config names).
func unknownEnv(env map[string]string, keys []string, also ...string) []string {
	known := map[string]string{}
	for _, k := range keys {
		known[EnvName(k)] = k
	}
	var names []string
	for name := range env {
		if !strings.HasPrefix(name, "SIEMCTL_") || slices.Contains(ownEnv, name) || slices.Contains(also, name) {
			continue
		}
		if _, ok := known[name]; ok || hasAnyPrefix(name, harnessEnvPrefixes) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		w := fmt.Sprintf("environment variable %s is not a configuration key and is ignored", name)
		best, bestD := "", 4 // as close as suggest's for the file's keys
		for env := range known {
			if d := levenshtein(name, env); d < bestD || d == bestD && best != "" && env < best {
				best, bestD = env, d
			}
		}
		if best != "" {
			w += fmt.Sprintf("; did you mean %s (%s)?", best, known[best])
		} else {
			w += "; see the configuration reference (siemctl help config)"
		}
		out = append(out, w)
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
