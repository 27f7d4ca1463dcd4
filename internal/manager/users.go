package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// User is an API user (GET /security/users item).
type User struct {
	ID         int    `json:"id"`
	Username   string `json:"username"`
	Roles      []int  `json:"roles"`
	AllowRunAs bool   `json:"allow_run_as"`
}

type wireUser struct {
	ID         flexInt   `json:"id"`
	Username   string    `json:"username"`
	Roles      []flexInt `json:"roles"`
	AllowRunAs bool      `json:"allow_run_as"`
}

func (w wireUser) user() User {
	u := User{ID: int(w.ID), Username: w.Username, AllowRunAs: w.AllowRunAs, Roles: make([]int, 0, len(w.Roles))}
	for _, r := range w.Roles {
		u.Roles = append(u.Roles, int(r))
	}
	return u
}

// Users lists the API users (paginated like agents, collected).
func (c *Client) Users(ctx context.Context) ([]User, error) {
	out := []User{}
	offset, prevFirst := 0, -1
	for {
		q := url.Values{"offset": {strconv.Itoa(offset)}, "limit": {strconv.Itoa(DefaultPageLimit)}}
		rq := request{method: http.MethodGet, path: "/security/users", query: q}
		env, err := callEnvelope[wireUser](ctx, c, rq)
		if err != nil {
			return nil, err
		}
		// The same guards as the agent listing: a page served again, or more
		// rows than asked for or than announced, stops the listing.
		switch n := len(env.AffectedItems); {
		case n > 0 && offset > 0 && int(env.AffectedItems[0].ID) == prevFirst:
			return nil, c.pagingError(rq, fmt.Sprintf("the page at offset %d starts again with user %d: the server ignores offset; stopped", offset, prevFirst))
		case n > DefaultPageLimit:
			return nil, c.pagingError(rq, fmt.Sprintf("the page at offset %d holds %d users, more than the %d asked for: the server ignores limit; stopped", offset, n, DefaultPageLimit))
		case offset+n > env.TotalAffectedItems:
			return nil, c.pagingError(rq, fmt.Sprintf("%d users received but total_affected_items is %d: the server ignores offset or limit; stopped", offset+n, env.TotalAffectedItems))
		}
		if len(env.AffectedItems) > 0 {
			prevFirst = int(env.AffectedItems[0].ID)
		}
		for _, w := range env.AffectedItems {
			out = append(out, w.user())
		}
		offset += len(env.AffectedItems)
		if len(env.AffectedItems) == 0 || offset >= env.TotalAffectedItems {
			return out, env.Err()
		}
	}
}

// ValidateUsername applies the API schema: 4 to 64 characters.
func ValidateUsername(name string) error {
	n := utf8.RuneCountInString(name)
	if n < 4 || n > 64 {
		return fmt.Errorf("%w %q: API user names are 4 to 64 characters long", ErrInvalidUsername, name)
	}
	return nil
}

// ValidatePassword applies the manager's password policy locally, so a bad
// password is never sent: length 8–64 (code 5009), then an upper and a lower
// case letter, a digit and a symbol (code 5007). The error never contains
// the password and matches ErrInsecurePassword.
func ValidatePassword(pw string) error {
	if n := utf8.RuneCountInString(pw); n < 8 || n > 64 {
		return &ItemError{Code: CodePasswordLength, Message: "Insecure user password provided",
			Remediation: fmt.Sprintf("the password must be 8 to 64 characters long (got %d)", n)}
	}
	var lower, upper, digit, symbol bool
	for _, r := range pw {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		case unicode.IsSpace(r) && r != ' ':
			// the server's ".{8,}" refuses newlines; treat other space as a symbol
			if r == '\n' || r == '\r' {
				return &ItemError{Code: CodePasswordClasses, Message: "Insecure user password provided",
					Remediation: "the password must not contain line breaks"}
			}
			symbol = true
		default:
			symbol = true
		}
	}
	var missing []string
	if !upper {
		missing = append(missing, "an upper case letter")
	}
	if !lower {
		missing = append(missing, "a lower case letter")
	}
	if !digit {
		missing = append(missing, "a digit")
	}
	if !symbol {
		missing = append(missing, "a symbol")
	}
	if len(missing) > 0 {
		return &ItemError{Code: CodePasswordClasses, Message: "Insecure user password provided",
			Remediation: "the password needs " + joinAnd(missing)}
	}
	return nil
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
			out = x
		case i == len(s)-1:
			out += " and " + x
		default:
			out += ", " + x
		}
	}
	return out
}

// CreateUserCall is the request CreateUser sends, for dry runs (the
// password is never shown).
func CreateUserCall(name string) string {
	b, _ := json.Marshal(map[string]string{"username": name, "password": "(from --password-file/--password-stdin, not shown)"})
	return http.MethodPost + " /security/users " + string(b)
}

// CreateUser creates an API user (POST /security/users). The name and the
// password are checked locally first; the server's 400 5007/5009 and the
// 5000 per-item failure are returned as errors too.
func (c *Client) CreateUser(ctx context.Context, name, password string) (User, error) {
	if err := ValidateUsername(name); err != nil {
		return User{}, err
	}
	if err := ValidatePassword(password); err != nil {
		return User{}, fmt.Errorf("create API user %q: %w", name, err)
	}
	body := struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}{name, password}
	env, err := callEnvelope[wireUser](ctx, c, request{method: http.MethodPost, path: "/security/users", body: body})
	if err != nil {
		return User{}, fmt.Errorf("create API user %q: %w", name, err)
	}
	if len(env.FailedItems) > 0 {
		return User{}, fmt.Errorf("create API user %q: %w", name, &env.FailedItems[0])
	}
	if len(env.AffectedItems) == 0 {
		return User{}, fmt.Errorf("create API user %q: the manager created nothing: %s", name, env.Message)
	}
	return env.AffectedItems[0].user(), nil
}
