package indexer

import "testing"

func TestSimpleMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"siem-alerts-4.x-*", "siem-alerts-4.x-2025.01.15", true},
		{"siem-alerts-*", "siem-alerts-4.x-2025.01.15", true},
		{"siem-*", "siem-archives-4.x-2025.01.15", true},
		{"siem-alerts-4.x-*", "siem-archives-4.x-2025.01.15", false},
		{"*", "anything", true},
		{"*-4.x-*", "siem-alerts-4.x-2025", true},
		{"*-4.x-*", "siem-alerts-5.x-2025", false},
		{"ab*b", "ab", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXcYb", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"ss4o_logs-*-*", "ss4o_logs-a-b", true},
		{"ss4o_logs-*-*", "ss4o_logs-a", false},
	}
	for _, tc := range tests {
		if got := simpleMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("simpleMatch(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}
