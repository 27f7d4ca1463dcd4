package manager

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Sentinels matched with errors.Is against *ItemError, *APIError and tool
// errors alike.
var (
	// ErrAgentNotFound: the agent id is not registered (API code 1701,
	// agent_control "** Invalid agent id", manage_agents "ID is not present").
	ErrAgentNotFound = errors.New("agent does not exist")
	// ErrManagerAgent: the action is not available for agent 000, the manager
	// itself (API code 1703, or rejected locally before sending).
	ErrManagerAgent = errors.New("action not available for the manager (agent 000)")
	// ErrAgentNotActive: the agent is not connected (API code 1707).
	ErrAgentNotActive = errors.New("agent is not active")
	// ErrInvalidAgentID: the id is not three digits.
	ErrInvalidAgentID = errors.New("invalid agent id")
	// ErrInsecurePassword: the password breaks the API password policy
	// (codes 5007, 5009), checked locally before anything is sent.
	ErrInsecurePassword = errors.New("insecure password")
	// ErrInvalidUsername: the API user name is not 4–64 characters.
	ErrInvalidUsername = errors.New("invalid username")
	// ErrUnsupported: the tool does not know the sub-command (real
	// wazuh-control has no `check`).
	ErrUnsupported = errors.New("not supported by this tool")
)

// Known manager error codes (framework/wazuh/core/exception.py, 4.x).
const (
	CodeInternal          = 1000
	CodeDaemonsNotReady   = 1017
	CodeAgentNotFound     = 1701
	CodeManagerAgent      = 1703
	CodeAgentNotActive    = 1707
	CodeAuthdNotRunning   = 1726
	CodeNotEligible       = 1731
	CodeARDisabled        = 1750
	CodeConfigInvalid     = 1908
	CodeClusterNotRunning = 3013
	CodeRequestTimeout    = 3021
	CodePermissionDenied  = 4000
	CodeUserNotCreated    = 5000
	CodeUserNotFound      = 5001
	CodePasswordClasses   = 5007
	CodePasswordLength    = 5009
	CodeIPBlocked         = 6000
	CodeRateLimited       = 6001
)

var codeExplanations = map[int]string{
	CodeInternal:          "the manager hit an internal error; see its api.log and ossec.log",
	1013:                  "the API could not connect to a manager socket; is the daemon behind it running?",
	1014:                  "the API lost the connection to a manager socket",
	CodeDaemonsNotReady:   "some manager daemons are not ready yet (typical right after a restart); wait and retry",
	CodeAgentNotFound:     "the agent id is not registered; list agents with `siemctl agents list`",
	CodeManagerAgent:      "agent 000 is the manager itself; restart or remove the manager through its service instead",
	1705:                  "an agent with the same name already exists",
	1706:                  "an agent with the same IP already exists, or the IP is invalid",
	CodeAgentNotActive:    "the agent is not connected, so it cannot receive the command",
	1708:                  "an agent with the same id already exists",
	1710:                  "the group does not exist",
	CodeAuthdNotRunning:   "wazuh-authd is not running, so agents cannot be added or removed through the API",
	CodeNotEligible:       "the agent does not match the filters (status, older_than); removing a recently seen agent needs older_than=0s",
	CodeARDisabled:        "active response is disabled on the agent, so it cannot be restarted remotely",
	1757:                  "the manager failed to delete the agent",
	CodeConfigInvalid:     "the manager configuration does not validate; fix the reported files",
	3012:                  "the cluster is not running",
	CodeClusterNotRunning: "the cluster is not running; it may be disabled in ossec.conf",
	3020:                  "a cluster request timed out",
	CodeRequestTimeout:    "the API request took longer than intervals.request_timeout",
	CodePermissionDenied:  "the API user lacks the RBAC permission for this action",
	CodeUserNotCreated:    "the API user could not be created (does the name already exist?)",
	CodeUserNotFound:      "the API user does not exist",
	5004:                  "administrator users cannot be removed or updated",
	CodePasswordClasses:   "the password needs an upper and a lower case letter, a digit and a symbol",
	CodePasswordLength:    "the password must be 8 to 64 characters long",
	5011:                  "administrator users can only be modified by themselves",
	CodeIPBlocked:         "too many failed logins from this address; the API blocks it for api.yaml access.block_time (300 s by default)",
	CodeRateLimited:       "the API allows access.max_request_per_minute (300 by default) for all clients together",
}

// Explain returns a one-line explanation of a manager error code, or "".
func Explain(code int) string { return codeExplanations[code] }

// codeSentinel maps a code to the sentinel it matches.
func codeSentinel(code int) error {
	switch code {
	case CodeAgentNotFound:
		return ErrAgentNotFound
	case CodeManagerAgent:
		return ErrManagerAgent
	case CodeAgentNotActive:
		return ErrAgentNotActive
	case CodePasswordClasses, CodePasswordLength:
		return ErrInsecurePassword
	}
	return nil
}

// codeKind maps a code (and HTTP status) to a netclient kind.
func codeKind(status, code int) error {
	switch code {
	case CodeIPBlocked, CodePermissionDenied:
		return netclient.ErrForbidden
	case CodeRateLimited:
		return netclient.ErrRateLimited
	case CodeDaemonsNotReady:
		return netclient.ErrNotReady
	case CodeRequestTimeout, 3020:
		return netclient.ErrTimeout
	}
	if status == 0 || status/100 == 2 {
		return netclient.ErrBadResponse
	}
	return netclient.StatusKind(status)
}

// ItemError is one per-item failure of an affected-items result: the same
// error for one or more ids.
type ItemError struct {
	Code        int      `json:"code"`
	Message     string   `json:"message"`
	Remediation string   `json:"remediation,omitempty"`
	IDs         []string `json:"ids"`
}

func (e *ItemError) Error() string {
	var b strings.Builder
	if len(e.IDs) > 0 {
		b.WriteString(strings.Join(e.IDs, ","))
		b.WriteString(": ")
	}
	msg := e.Message
	if msg == "" {
		msg = "failed"
	}
	b.WriteString(msg)
	if e.Code != 0 {
		fmt.Fprintf(&b, " (code %d)", e.Code)
	}
	return b.String()
}

// Is matches the sentinels for known codes (ErrAgentNotFound, …).
func (e *ItemError) Is(target error) bool {
	s := codeSentinel(e.Code)
	return s != nil && s == target
}

// Explanation is Explain(e.Code), falling back to the remediation.
func (e *ItemError) Explanation() string {
	if s := Explain(e.Code); s != "" {
		return s
	}
	return e.Remediation
}

// APIError is a failed request as the manager described it: an
// application/problem+json body, or an envelope with error != 0 where the
// whole request failed. It unwraps to the netclient kind, so
// errors.Is(err, netclient.ErrRateLimited) works on it.
type APIError struct {
	Status      int    // HTTP status
	Code        int    // manager error code (the body's "error"), 0 if none
	Title       string // e.g. "Unauthorized"
	Detail      string // e.g. "Invalid credentials"
	Remediation string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "manager API: HTTP %d", e.Status)
	if e.Code != 0 {
		fmt.Fprintf(&b, " code %d", e.Code)
	}
	switch {
	case e.Title != "" && e.Detail != "":
		fmt.Fprintf(&b, ": %s: %s", e.Title, e.Detail)
	case e.Detail != "":
		fmt.Fprintf(&b, ": %s", e.Detail)
	case e.Title != "":
		fmt.Fprintf(&b, ": %s", e.Title)
	default:
		if t := http.StatusText(e.Status); t != "" {
			fmt.Fprintf(&b, ": %s", t)
		}
	}
	return b.String()
}

// Kind is the netclient kind of the failure.
func (e *APIError) Kind() error { return codeKind(e.Status, e.Code) }

// Unwrap exposes the netclient kind.
func (e *APIError) Unwrap() error { return e.Kind() }

// Is matches the sentinels for known codes.
func (e *APIError) Is(target error) bool {
	s := codeSentinel(e.Code)
	return s != nil && s == target
}

// HasCode reports whether err carries the manager error code (as an
// *APIError, a *netclient.Error or any *ItemError in its chain).
func HasCode(err error, code int) bool {
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == code {
		return true
	}
	var ne *netclient.Error
	if errors.As(err, &ne) && ne.Code == code {
		return true
	}
	var ie *ItemError
	if errors.As(err, &ie) && ie.Code == code {
		return true
	}
	var pe *PartialError
	if errors.As(err, &pe) {
		for i := range pe.Failed {
			if pe.Failed[i].Code == code {
				return true
			}
		}
	}
	return false
}

// PartialError reports the per-item failures of a result that the caller
// could not otherwise see (e.g. unknown ids while iterating agents).
type PartialError struct {
	Message string
	Failed  []ItemError
}

func (e *PartialError) Error() string {
	parts := make([]string, 0, len(e.Failed))
	for i := range e.Failed {
		parts = append(parts, e.Failed[i].Error())
	}
	msg := e.Message
	if msg == "" {
		msg = "some items failed"
	}
	return msg + ": " + strings.Join(parts, "; ")
}

// Unwrap exposes every item error, so errors.Is(err, ErrAgentNotFound) works.
func (e *PartialError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i := range e.Failed {
		out[i] = &e.Failed[i]
	}
	return out
}
