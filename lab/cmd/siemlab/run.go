package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"

	"github.com/siemctl/siemctl/lab"
	"github.com/siemctl/siemctl/lab/emu"
	"github.com/siemctl/siemctl/lab/labcli"
)

// emuPrograms are the emulator programs of the lab contract.
var emuPrograms = emu.Programs()

// run dispatches on argv[0]: an emulator name runs emu.Main, anything else the siemlab CLI.
func run(ctx context.Context, argv []string) int {
	name := filepath.Base(argv[0])
	if slices.Contains(emuPrograms, name) {
		return emu.Main(ctx, name, argv[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	return labcli.Main(ctx, argv[1:], os.Stdin, os.Stdout, os.Stderr, labcli.Deps{Emulators: emulators{}, EmuMain: emu.Main})
}

// emulators adapts lab/emu to lab.Emulators.
type emulators struct{}

func (emulators) PackageFiles(s lab.EmuPackageSpec) ([]lab.File, error) {
	// A profile whose packaged ossec.conf has no syslog listener is a stock Wazuh host (lab.Profile).
	p := s.Profile
	files, err := emu.PackageFiles(emu.PackageSpec{Component: s.Component, Version: s.Version, Root: s.Root, Binary: s.Binary,
		Ports: emu.Ports{API: s.Ports.API, Agent: s.Ports.Agent, Enrollment: s.Ports.Enrollment, Syslog: s.Ports.Syslog,
			Dashboard: s.Ports.Dashboard, Indexer: s.Ports.Indexer},
		Layout: emu.Layout{InstallDir: p.InstallDir, ManagerUnit: p.ManagerUnit(), Control: p.Control, Stock: !p.Syslog, Syslog: s.Syslog,
			DashboardHome: p.DashboardHome(), DashboardUnit: p.DashboardUnit(), DashboardConfig: p.DashboardConfig,
			DashboardCerts: p.DashboardConf() + "/certs"}, SeedFrom: s.SeedFrom})
	if err != nil {
		return nil, err
	}
	out := make([]lab.File, 0, len(files))
	for _, f := range files {
		out = append(out, lab.File{Path: f.Path, Mode: f.Mode, Data: f.Data, Link: f.Link, Conffile: f.Conffile})
	}
	return out, nil
}

func (emulators) SetAPIUserPassword(installDir, user, password string) error {
	return emu.SetAPIUserPassword(installDir, user, password)
}

func (emulators) SetDashboardKeystore(confDir string, settings map[string]string) error {
	return emu.SetDashboardKeystore(confDir, settings)
}

func (emulators) Template(version, alertsPrefix string) []byte {
	return emu.Template(version, alertsPrefix)
}

func (emulators) SetFault(root, kind string, on bool) error { return emu.SetFault(root, kind, on) }
