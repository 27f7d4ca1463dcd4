package lab

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"time"
)

// Wazuh's Filebeat module comes as wazuh-filebeat-<revision>.tar.gz from packages.wazuh.com
// (siemctl's shipper/module step fetches the target manager's from shipper.module_source with
// {module} = that name). The real tarball holds one directory, the module's, unpacked into
// <path.home>/module: wazuh/ with each fileset's manifest.yml, config/<fileset>.yml and
// ingest/pipeline.json, owned by root:root, directories 0755 and files 0644 (wazuh/wazuh
// extensions/filebeat/7.x/wazuh-module/README.md, "How-To update module tar.gz file").
//
// The lab cannot reach packages.wazuh.com, and the real pipeline calls geoip, which the lab's
// OpenSearch lacks, so it packs its own module (the files its shipper package installs) in that
// layout under the real tarball names of its releases, into DIR/filebeat-modules, and its siemctl
// config's shipper.module_source points there.

// moduleTarballDir is where the lab keeps its module tarballs, under its directory.
const moduleTarballDir = "filebeat-modules"

// moduleMTime is every entry's modification time: the tarball of the same files is the same bytes.
var moduleMTime = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// ModuleTarball returns the layout's Filebeat module as Wazuh packs its module tarball: a gzip tar
// of the directory <Module>/ (each directory before its files), root:root, 0755 and 0644.
func ModuleTarball(s ShipperLayout) ([]byte, error) {
	files, err := moduleFiles(s)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	hdr := func(name string, typ byte, mode int64, size int) *tar.Header {
		return &tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: int64(size), ModTime: moduleMTime,
			Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
	}
	dirs := map[string]bool{}
	var addDir func(d string) error
	addDir = func(d string) error {
		if d == "." || dirs[d] {
			return nil
		}
		if err := addDir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(hdr(d+"/", tar.TypeDir, 0o755, 0))
	}
	for _, f := range files {
		name := path.Join(s.Module, filepath.ToSlash(f.Path))
		if err := addDir(path.Dir(name)); err != nil {
			return nil, fmt.Errorf("module tarball: %w", err)
		}
		if err := tw.WriteHeader(hdr(name, tar.TypeReg, 0o644, len(f.Data))); err != nil {
			return nil, fmt.Errorf("module tarball: %w", err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("module tarball: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("module tarball: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("module tarball: %w", err)
	}
	return buf.Bytes(), nil
}

// moduleSource is siemctl's shipper.module_source for the lab: its tarballs, {module} = the name.
func (l *Lab) moduleSource() string {
	return filepath.Join(l.st.Dir, moduleTarballDir, "{module}.tar.gz")
}

// writeModuleTarballs packs the lab's module under the tarball name of every release of the lab's
// set (DIR/filebeat-modules/<name>.tar.gz), where the layout's siemctl profile manages the module.
func (l *Lab) writeModuleTarballs() error {
	if !l.prof.Shipper.ModuleTarballs {
		return nil
	}
	tgz, err := ModuleTarball(l.prof.Shipper)
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for _, v := range SetOf(l.st.Version) {
		r, _ := ReleaseOf(v)
		if r.FilebeatModule == "" || done[r.FilebeatModule] {
			continue
		}
		done[r.FilebeatModule] = true
		if err := writeFile(filepath.Join(l.st.Dir, moduleTarballDir, r.FilebeatModule+".tar.gz"), tgz, 0o644); err != nil {
			return err
		}
	}
	return nil
}
