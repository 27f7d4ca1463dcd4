package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Secret says where a password comes from. Exactly one source is used, in
// this order: password_command, password_env, password_file. The value is
// resolved at use and never stored in the Config.
type Secret struct {
	PasswordFile    string   `mapstructure:"password_file"`
	PasswordEnv     string   `mapstructure:"password_env"`
	PasswordCommand []string `mapstructure:"password_command"`
}

// ErrSecret is matched by every secret resolution failure.
var ErrSecret = errors.New("secret unavailable")

// SecretError explains why a secret could not be read. It never holds the
// secret itself.
type SecretError struct {
	Key string // e.g. "indexer.password_file"
	Msg string
}

func (e *SecretError) Error() string        { return fmt.Sprintf("%s: %s", e.Key, e.Msg) }
func (e *SecretError) Is(target error) bool { return target == ErrSecret }

// Source describes where the secret comes from, for messages.
func (s Secret) Source() string {
	switch {
	case len(s.PasswordCommand) > 0:
		return "password_command " + s.PasswordCommand[0]
	case s.PasswordEnv != "":
		return "password_env " + s.PasswordEnv
	default:
		return "password_file " + s.PasswordFile
	}
}

func (s Secret) validate(section string) error {
	if len(s.PasswordCommand) == 0 && s.PasswordEnv == "" && s.PasswordFile == "" {
		return &Error{Key: section + ".password_file", Msg: "no password source; set password_file, password_env or password_command"}
	}
	return nil
}

// Resolve returns the password. section names the config section for errors
// ("indexer", "manager"). lookupEnv defaults to os.LookupEnv.
func (s Secret) Resolve(ctx context.Context, section string, lookupEnv func(string) (string, bool)) (string, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	switch {
	case len(s.PasswordCommand) > 0:
		return s.runCommand(ctx, section+".password_command")
	case s.PasswordEnv != "":
		v, ok := lookupEnv(s.PasswordEnv)
		if !ok || v == "" {
			return "", &SecretError{Key: section + ".password_env", Msg: fmt.Sprintf("environment variable %s is not set; export it or use password_file", s.PasswordEnv)}
		}
		return v, nil
	default:
		data, err := os.ReadFile(s.PasswordFile)
		if err != nil {
			return "", &SecretError{Key: section + ".password_file", Msg: fmt.Sprintf("%v; create it with the password (mode 0600) or set password_env", err)}
		}
		return firstLine(string(data), section+".password_file")
	}
}

// Bounds of a password_command.
const (
	passwordCommandTimeout = 10 * time.Second
	// passwordCommandWaitDelay is how long siemctl waits, after the command
	// exited or was killed, for its output pipes to close: a background
	// child that inherited them (a credential agent it started) must not
	// keep siemctl waiting.
	passwordCommandWaitDelay = 500 * time.Millisecond
	maxPasswordOutput        = 64 << 10
)

// runCommand runs the password_command in its own process group (killed
// whole on timeout or Ctrl-C), with no stdin, output capped, and pipes held
// open by a left-behind child not waited for. Every failure is the secret
// source's, named by key; its stderr is never echoed (it may hold the
// secret).
func (s Secret) runCommand(ctx context.Context, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, passwordCommandTimeout)
	defer cancel()
	name := s.PasswordCommand[0]
	cmd := exec.CommandContext(ctx, name, s.PasswordCommand[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// the process group this command leads, by its id
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = passwordCommandWaitDelay
	out := &netclient.CapWriter{What: key + " output", Limit: maxPasswordOutput}
	cmd.Stdout, cmd.Stderr = out, io.Discard
	start := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		// Whatever happened, nothing the command started outlives it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	fail := func(msg string) error {
		return &SecretError{Key: key, Msg: fmt.Sprintf("%s %s", name, msg)}
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fail(fmt.Sprintf("gave no password within %s (killed with its process group); run it by hand to see why", time.Since(start).Round(100*time.Millisecond)))
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s: %w", key, ctx.Err())
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited (status 0) but left a child holding its output open:
		// what it printed before exiting is used; the child was killed.
		if err := out.Err(); err != nil {
			return "", fail(fmt.Sprintf("printed more than %d bytes", maxPasswordOutput))
		}
		return firstLine(string(out.Bytes()), key)
	case err != nil:
		return "", fail(fmt.Sprintf("failed: %v; run it by hand to see why", err))
	case out.Err() != nil:
		return "", fail(fmt.Sprintf("printed more than %d bytes; it must print the password on its first line", maxPasswordOutput))
	}
	return firstLine(string(out.Bytes()), key)
}

func firstLine(s, key string) (string, error) {
	line, _, _ := strings.Cut(s, "\n")
	line = strings.TrimRight(line, "\r")
	if line == "" {
		return "", &SecretError{Key: key, Msg: "is empty; the first line must hold the password"}
	}
	return line, nil
}

// FileMode reports the permission bits of the password file and whether they
// let group or others read it (a health warning). ok is false when the secret
// does not come from a file or the file is missing.
func (s Secret) FileMode() (mode os.FileMode, loose bool, ok bool) {
	if len(s.PasswordCommand) > 0 || s.PasswordEnv != "" || s.PasswordFile == "" {
		return 0, false, false
	}
	fi, err := os.Stat(s.PasswordFile)
	if err != nil {
		return 0, false, false
	}
	return fi.Mode().Perm(), fi.Mode().Perm()&0o077 != 0, true
}
