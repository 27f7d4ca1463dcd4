package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/process"
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
	maxPasswordOutput        = process.SecretMaxOutput
)

// passwordRunner runs a password_command: in its own process group, killed
// whole on timeout, Ctrl-C and after it exits (nothing it started outlives
// it); no stdin; stdout whole up to its cap; stderr never read (it may hold
// the secret); pipes held open by a left-behind child not waited for.
var passwordRunner process.Runner = process.ExecRunner{
	MaxOutput: maxPasswordOutput, WholeStdout: true, DiscardStderr: true,
	WaitDelay: passwordCommandWaitDelay, KillGroupOnExit: true,
}

// runCommand runs the password_command. Every failure is the secret
// source's, named by key; its stderr is never echoed.
func (s Secret) runCommand(ctx context.Context, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, passwordCommandTimeout)
	defer cancel()
	name := s.PasswordCommand[0]
	start := time.Now()
	out, _, code, err := passwordRunner.Run(ctx, nil, name, s.PasswordCommand[1:]...)
	fail := func(msg string) error {
		return &SecretError{Key: key, Msg: fmt.Sprintf("%s %s", name, msg)}
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fail(fmt.Sprintf("gave no password within %s (killed with its process group); run it by hand to see why", time.Since(start).Round(100*time.Millisecond)))
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s: %w", key, ctx.Err())
	case errors.Is(err, netclient.ErrTooLarge):
		return "", fail(fmt.Sprintf("printed more than %d bytes; it must print the password on its first line", maxPasswordOutput))
	case err != nil:
		return "", fail(fmt.Sprintf("failed: %v; run it by hand to see why", err))
	case code != 0:
		return "", fail(fmt.Sprintf("failed: exit status %d; run it by hand to see why", code))
	}
	return firstLine(string(out), key)
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
