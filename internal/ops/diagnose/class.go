package diagnose

import "errors"

// Classes of causes, for a caller that sorts failures by kind (siemctl's exit codes,
// internal/cli/exit.go): a Report's Err is its cause's class, nil for a cause of no class.
var (
	// ErrAccessDenied: the component's service user is refused a file or directory it needs
	// (it cannot read its key, cannot write its data directory).
	ErrAccessDenied = errors.New("the service user is refused a file it needs")
	// ErrConfigMismatch: the component runs, elsewhere than siemctl's configuration looks
	// for it (the indexer's http.port is not indexer.url's port).
	ErrConfigMismatch = errors.New("the component does not run where siemctl's configuration looks for it")
)

// Class is the finding's class: ErrAccessDenied, ErrConfigMismatch, or nil.
func (f Finding) Class() error {
	switch f.Kind {
	case KindPermission:
		return ErrAccessDenied
	case KindTLSFile, KindDashboardTLS:
		if f.denied {
			return ErrAccessDenied
		}
	case KindHTTPPort, KindDashboardPort, KindPlainHTTP:
		return ErrConfigMismatch
	}
	return nil
}

// Err is the class of the report's cause (its first finding): ErrAccessDenied,
// ErrConfigMismatch, or nil.
func (r Report) Err() error { return r.Cause().Class() }
