package rules

import (
	"context"
	"errors"
	"fmt"

	"github.com/siemctl/siemctl/internal/manager"
)

// ConfigValidator is the manager API's configuration validation.
type ConfigValidator interface {
	ValidateConfig(ctx context.Context) (manager.ConfigValidation, error)
}

// ControlChecker is the control tool's `check`.
type ControlChecker interface {
	ControlCheck(ctx context.Context) (manager.CheckResult, error)
}

// Manager check states.
const (
	ManagerOK      = "ok"
	ManagerInvalid = "invalid"
	ManagerNotRun  = "not run"
)

// ManagerResult is the manager's own verdict on its configuration.
type ManagerResult struct {
	State  string   `json:"state"`
	Source string   `json:"source,omitempty"` // "api" or "control check"
	Errors []string `json:"errors"`
	Detail string   `json:"detail,omitempty"` // why it could not run
}

// ManagerCheck asks the manager API to validate its configuration and falls
// back to the control tool's `check` when the API is not available (api
// or tools may be nil).
func ManagerCheck(ctx context.Context, api ConfigValidator, tools ControlChecker) ManagerResult {
	var reasons []error
	if api != nil {
		v, err := api.ValidateConfig(ctx)
		if err == nil {
			if v.OK {
				return ManagerResult{State: ManagerOK, Source: "api", Errors: []string{}}
			}
			errs := append([]string{}, v.Errors...)
			if len(errs) == 0 {
				errs = []string{"the manager reports an invalid configuration without details"}
			}
			return ManagerResult{State: ManagerInvalid, Source: "api", Errors: errs}
		}
		reasons = append(reasons, fmt.Errorf("api: %w", err))
	}
	if tools != nil {
		r, err := tools.ControlCheck(ctx)
		if err == nil {
			if r.OK {
				return ManagerResult{State: ManagerOK, Source: "control check", Errors: []string{}}
			}
			errs := make([]string, 0, len(r.Problems))
			for _, p := range r.Problems {
				errs = append(errs, p.String())
			}
			return ManagerResult{State: ManagerInvalid, Source: "control check", Errors: errs}
		}
		reasons = append(reasons, fmt.Errorf("control check: %w", err))
	}
	if len(reasons) == 0 {
		reasons = append(reasons, errors.New("no manager API or tools configured"))
	}
	return ManagerResult{State: ManagerNotRun, Errors: []string{}, Detail: errors.Join(reasons...).Error()}
}
