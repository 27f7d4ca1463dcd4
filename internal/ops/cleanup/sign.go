package cleanup

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// keySize is the length of the plan signing key.
const keySize = 32

// KeyPath is where the plan signing key lives: state_dir/cleanup/plan.key.
func KeyPath(stateDir string) string { return filepath.Join(stateDir, "cleanup", "plan.key") }

// Key returns the host's plan signing key, creating it (0600, in a 0700
// directory) on first use. The key file is never opened through a symlink
// and must belong to the running user with no group/other access: a plan
// signed with a key someone else could read proves nothing.
func Key(stateDir string) ([]byte, error) {
	if stateDir == "" {
		return nil, errors.New("state_dir is not configured: the cleanup plan key lives there")
	}
	path := KeyPath(stateDir)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("plan key directory: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil {
		return nil, fmt.Errorf("plan key directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("plan key directory %s is not a directory (a symlink?): remove it and make a new plan", dir)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("plan key %s is a symlink: remove it (siemctl creates a new key) and make a new plan", path)
		}
		return nil, fmt.Errorf("plan key: %w", err)
	}
	defer f.Close()
	if err := checkOwned(f, path, 0o077); err != nil {
		return nil, fmt.Errorf("plan key %w; remove it (siemctl creates a new key) and make a new plan", err)
	}
	key, err := io.ReadAll(io.LimitReader(f, keySize+1))
	if err != nil {
		return nil, fmt.Errorf("plan key: %w", err)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("plan key %s holds %d bytes, want %d: remove it (siemctl creates a new key) and make a new plan", path, len(key), keySize)
	}
	return key, nil
}

func createKey(path string) ([]byte, error) {
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another siemctl created it first: use that one.
		return Key(filepath.Dir(filepath.Dir(path)))
	}
	if err != nil {
		return nil, fmt.Errorf("create plan key: %w", err)
	}
	_, err = f.Write(key)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("create plan key: %w", err)
	}
	return key, nil
}

// checkOwned fails unless the open file belongs to root or the running user
// and has none of the forbidden permission bits.
func checkOwned(f *os.File, path string, forbidden fs.FileMode) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not root or the running user", path, st.Uid)
	}
	if m := fi.Mode().Perm(); m&forbidden != 0 {
		return fmt.Errorf("%s has mode %#o (%#o must be clear)", path, m, forbidden)
	}
	return nil
}

// signature is the HMAC-SHA256 of the plan's JSON with empty Checksum and
// Signature fields.
func signature(p Plan, key []byte) (string, error) {
	p.Checksum, p.Signature = "", ""
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode plan: %w", err)
	}
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil)), nil
}
