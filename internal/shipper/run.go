package shipper

import "github.com/siemctl/siemctl/internal/process"

// Runner runs one program (see process.Runner).
type Runner = process.Runner

// ExecRunner runs programs with os/exec (see process.ExecRunner).
type ExecRunner = process.ExecRunner
