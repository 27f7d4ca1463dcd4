package stack

import (
	"context"
	"fmt"

	"github.com/siemctl/siemctl/internal/shipper"
)

// Shipper returns the shipper runner for the configured binary.
func (s *Stack) Shipper() (*shipper.Shipper, error) {
	sh, err := shipper.New(s.Config.Shipper.Binary, s.Config.Shipper.ConfigDir, nil)
	if err != nil {
		return nil, err
	}
	return sh.WithPaths(s.Config.Shipper.HomeDir, s.Config.Shipper.DataDir), nil
}

// shipperCheck adapts the shipper to the health check's interface.
type shipperCheck struct{ s *Stack }

func (c shipperCheck) TestConfig(ctx context.Context) (bool, string, error) {
	sh, err := c.s.Shipper()
	if err != nil {
		return false, "", err
	}
	return sh.TestConfig(ctx)
}

func (c shipperCheck) TestOutput(ctx context.Context) (bool, []string, error) {
	sh, err := c.s.Shipper()
	if err != nil {
		return false, nil, err
	}
	rep, err := sh.TestOutput(ctx)
	if err != nil {
		return false, nil, err
	}
	var lines []string
	for _, h := range rep.Hosts {
		for _, st := range h.Steps {
			line := fmt.Sprintf("%s %s... %s", h.URL, st.Name, st.Status)
			if st.Detail != "" {
				line += " " + st.Detail
			}
			lines = append(lines, line)
		}
	}
	if rep.Exiting != "" {
		lines = append(lines, "Exiting: "+rep.Exiting)
	}
	return rep.OK, lines, nil
}
