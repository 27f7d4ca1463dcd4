package verdict

import "testing"

// TestJoinFixes: each fix once, in the order first given.
func TestJoinFixes(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"siemctl services restart indexer"}, "siemctl services restart indexer"},
		{[]string{"b", "a", "b", "c", "a"}, "b; a; c"},
	} {
		if got := JoinFixes(tc.in); got != tc.want {
			t.Errorf("JoinFixes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
