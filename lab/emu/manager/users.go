package manager

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// APIUser is one API user as stored in api/configuration/security/users.json.
type APIUser struct {
	ID           int    `json:"id"`
	Username     string `json:"username"`
	PasswordHash string `json:"password"` // werkzeug-style "pbkdf2:sha256:<iter>$<salt>$<hex>"
	AllowRunAs   bool   `json:"allow_run_as"`
	Roles        []int  `json:"roles"`
	// TokensValidAfter invalidates tokens issued before it (a password change revokes tokens).
	TokensValidAfter int64 `json:"tokens_valid_after"`
}

type usersFile struct {
	Users []*APIUser `json:"users"`
}

// maxIDReserved: ids up to 99 are reserved for default users; the first created user gets 100.
const maxIDReserved = 99

const pbkdf2Iter = 10000

func hashPassword(pw string) (string, error) {
	salt := make([]byte, 8)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("salt: %w", err)
	}
	s := hex.EncodeToString(salt)
	dk, err := pbkdf2.Key(sha256.New, pw, []byte(s), pbkdf2Iter, 32)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return fmt.Sprintf("pbkdf2:sha256:%d$%s$%s", pbkdf2Iter, s, hex.EncodeToString(dk)), nil
}

func checkPassword(hash, pw string) bool {
	method, rest, ok := strings.Cut(hash, "$")
	if !ok {
		return false
	}
	salt, want, ok := strings.Cut(rest, "$")
	if !ok {
		return false
	}
	parts := strings.Split(method, ":")
	if len(parts) != 3 || parts[0] != "pbkdf2" || parts[1] != "sha256" {
		return false
	}
	iter, err := strconv.Atoi(parts[2])
	if err != nil || iter <= 0 || iter > 10_000_000 {
		return false
	}
	wantB, err := hex.DecodeString(want)
	if err != nil {
		return false
	}
	dk, err := pbkdf2.Key(sha256.New, pw, []byte(salt), iter, len(wantB))
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(dk, wantB) == 1
}

// UserStore is the API users file.
type UserStore struct {
	path     string
	defaults []string
	mu       sync.Mutex
}

// NewUserStore opens the users file of an install directory.
func NewUserStore(h Home) *UserStore {
	return &UserStore{path: h.UsersFile(), defaults: h.DefaultUsers()}
}

// DefaultUsers are the API users a fresh install has, each with its name as password: wazuh and
// wazuh-wui in Wazuh's own install directory (/var/ossec), siem and siem-wui in the siem layout's.
func (h Home) DefaultUsers() []string {
	if filepath.Base(filepath.Clean(h.Dir)) == "ossec" {
		return []string{"wazuh", "wazuh-wui"}
	}
	return []string{"siem", "siem-wui"}
}

func (s *UserStore) read() (*usersFile, error) {
	b, err := os.ReadFile(s.path)
	if err != nil {
		return nil, fmt.Errorf("read API users: %w", err)
	}
	var f usersFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read API users: %w", err)
	}
	return &f, nil
}

func (s *UserStore) update(fn func(f *usersFile) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("API users: %w", err)
	}
	lk := flock.New(s.path + ".lock")
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("lock API users: %w", err)
	}
	defer lk.Unlock()
	f, err := s.read()
	if errors.Is(err, fs.ErrNotExist) {
		f, err = &usersFile{}, nil
	}
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode API users: %w", err)
	}
	if err := renameio.WriteFile(s.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write API users: %w", err)
	}
	return nil
}

// EnsureDefaults creates the file with the default users (Home.DefaultUsers) when missing.
func (s *UserStore) EnsureDefaults() error {
	if _, err := os.Stat(s.path); err == nil {
		return nil
	}
	return s.update(func(f *usersFile) error {
		for i, name := range s.defaults {
			if f.find(name) != nil {
				continue
			}
			h, err := hashPassword(name)
			if err != nil {
				return err
			}
			f.Users = append(f.Users, &APIUser{ID: i + 1, Username: name, PasswordHash: h, AllowRunAs: true, Roles: []int{1}})
		}
		return nil
	})
}

func (f *usersFile) find(name string) *APIUser {
	for _, u := range f.Users {
		if u.Username == name {
			return u
		}
	}
	return nil
}

// Users returns all users.
func (s *UserStore) Users() ([]*APIUser, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return f.Users, nil
}

// Authenticate returns the user when the password matches.
func (s *UserStore) Authenticate(name, pw string) (*APIUser, bool) {
	f, err := s.read()
	if err != nil {
		return nil, false
	}
	u := f.find(name)
	if u == nil || !checkPassword(u.PasswordHash, pw) {
		return nil, false
	}
	return u, true
}

// Lookup returns the user by name.
func (s *UserStore) Lookup(name string) *APIUser {
	f, err := s.read()
	if err != nil {
		return nil
	}
	return f.find(name)
}

// Errors of user management (API codes 5000, 5001).
var (
	errUserExists  = errors.New("user exists")
	errUserMissing = errors.New("user does not exist")
)

// Create adds a user with the next free id (>= 100).
func (s *UserStore) Create(name, pw string) (*APIUser, error) {
	var created *APIUser
	err := s.update(func(f *usersFile) error {
		if f.find(name) != nil {
			return errUserExists
		}
		id := maxIDReserved + 1
		for _, u := range f.Users {
			if u.ID >= id {
				id = u.ID + 1
			}
		}
		h, err := hashPassword(pw)
		if err != nil {
			return err
		}
		created = &APIUser{ID: id, Username: name, PasswordHash: h, Roles: []int{}}
		f.Users = append(f.Users, created)
		return nil
	})
	return created, err
}

// SetPassword changes a user's password (by name or, when id > 0, by id) and revokes its tokens.
// create adds the user (with the next reserved id) when missing.
func (s *UserStore) SetPassword(name string, id int, pw string, create bool, now time.Time) (*APIUser, error) {
	var out *APIUser
	err := s.update(func(f *usersFile) error {
		var u *APIUser
		for _, c := range f.Users {
			if (id > 0 && c.ID == id) || (id == 0 && c.Username == name) {
				u = c
			}
		}
		if u == nil {
			if !create {
				return errUserMissing
			}
			nid := 1
			for _, c := range f.Users {
				if c.ID < maxIDReserved && c.ID >= nid {
					nid = c.ID + 1
				}
			}
			u = &APIUser{ID: nid, Username: name, AllowRunAs: true, Roles: []int{1}}
			f.Users = append(f.Users, u)
		}
		h, err := hashPassword(pw)
		if err != nil {
			return err
		}
		u.PasswordHash = h
		u.TokensValidAfter = now.Unix()
		out = u
		return nil
	})
	return out, err
}

// SetAPIUserPassword changes (or creates) an API user's password offline. When the users file does not
// exist yet it is created with the default users first.
func SetAPIUserPassword(h Home, user, password string) error {
	s := NewUserStore(h)
	if err := s.EnsureDefaults(); err != nil {
		return err
	}
	_, err := s.SetPassword(user, 0, password, true, time.Now())
	return err
}

// Password policy (framework/wazuh/security.py).
var pwRegexpParts = []*regexp.Regexp{
	regexp.MustCompile(`[a-z]`), regexp.MustCompile(`[A-Z]`), regexp.MustCompile(`\d`), regexp.MustCompile(`[^A-Za-z0-9]`),
}

// passwordPolicy returns 5009 (length), 5007 (character classes) or 0.
func passwordPolicy(pw string) int {
	if len(pw) < 8 || len(pw) > 64 {
		return 5009
	}
	for _, re := range pwRegexpParts {
		if !re.MatchString(pw) {
			return 5007
		}
	}
	return 0
}
