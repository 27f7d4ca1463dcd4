package lab

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cacheLayout is the version of what Prepare builds; bump it whenever the prepared home changes so
// that homes prepared by older code are detected (their ready marker differs) and rebuilt.
const cacheLayout = 2

// readyMarker is the name of the file, written last, that marks a prepared home (and a lab's farm
// of it) complete; its content is markerFor's.
const readyMarker = ".siemlab-ready"

// Module is an OpenSearch module that the integ-test distribution lacks (it carries only
// transport-netty4) and that the lab assembles from Maven Central: the plugin jar and its runtime
// dependencies, a plugin-descriptor.properties and, when the module needs permissions, a
// plugin-security.policy.
type Module struct {
	Name        string // directory under modules/ and descriptor name
	GroupID     string
	ArtifactID  string // the Maven artifact that holds the plugin class (version = OpenSearch version)
	Description string
	Classname   string
	Policy      string // plugin-security.policy ("" = none)
}

// Modules are the modules Prepare adds to every prepared home.
//
// ingest-common gives the ingest processors (json, date, date_index_name, remove, set, ...) the
// shipper's pipeline needs. Upstream declares extended.plugins=lang-painless only so painless
// scripts can call its processors' helpers; the processors themselves never touch painless, so
// the lab leaves painless out and the extension with it (the e2e test proves the processors work).
//
// lang-mustache renders {{ }} templates in processor values (the pipeline's on_failure set of
// {{ _ingest.on_failure_message }}): without it OpenSearch stores the template text literally.
// Maven Central publishes its plugin jar as lang-mustache-client; it needs to reflect on the
// template parameters' classes, hence its policy.
var Modules = []Module{
	{
		Name: "ingest-common", GroupID: "org.opensearch.plugin", ArtifactID: "ingest-common",
		Description: "Module for ingest processors that do not require additional security permissions or have large dependencies and resources",
		Classname:   "org.opensearch.ingest.common.IngestCommonPlugin",
	},
	{
		Name: "lang-mustache", GroupID: "org.opensearch.plugin", ArtifactID: "lang-mustache-client",
		Description: "Mustache scripting integration for OpenSearch",
		Classname:   "org.opensearch.script.mustache.MustachePlugin",
		Policy:      "grant {\n  // mustache.java reflects on the classes of template parameters\n  permission java.lang.RuntimePermission \"accessDeclaredMembers\";\n};\n",
	},
}

// markerFor is the content of the ready marker of a home of OpenSearch osv prepared by this code.
func markerFor(osv string, mods []Module) []byte {
	names := make([]string, len(mods))
	for i, m := range mods {
		names[i] = m.Name
	}
	return []byte(fmt.Sprintf("siemlab opensearch home\nlayout=%d\nopensearch=%s\nmodules=%s\nplugins=opensearch-security\n",
		cacheLayout, osv, strings.Join(names, ",")))
}

// homeReady tells whether home is a complete home of osv as this code prepares it: its marker
// matches and every module has its descriptor and plugin jar. A reason is given when it is not.
func homeReady(home, osv string, mods []Module) (bool, string) {
	got, err := os.ReadFile(filepath.Join(home, readyMarker))
	if err != nil {
		return false, "no ready marker"
	}
	if !bytes.Equal(got, markerFor(osv, mods)) {
		return false, "prepared by another siemlab (marker differs)"
	}
	for _, m := range mods {
		dir := filepath.Join(home, "modules", m.Name)
		if _, err := os.Stat(filepath.Join(dir, "plugin-descriptor.properties")); err != nil {
			return false, "module " + m.Name + " has no descriptor"
		}
		if _, err := os.Stat(filepath.Join(dir, m.ArtifactID+"-"+osv+".jar")); err != nil {
			return false, "module " + m.Name + " has no plugin jar"
		}
	}
	return true, ""
}

// pomFor is a throwaway project whose only dependency is the module's artifact, so that
// dependency:copy-dependencies yields the artifact with its runtime dependencies.
func pomFor(m Module, osv string) []byte {
	return []byte(fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>siemlab</groupId>
  <artifactId>module-%[1]s</artifactId>
  <version>%[4]s</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>%[2]s</groupId>
      <artifactId>%[3]s</artifactId>
      <version>%[4]s</version>
    </dependency>
  </dependencies>
</project>
`, m.Name, m.GroupID, m.ArtifactID, osv))
}

// descriptorFor is the module's plugin-descriptor.properties, in the key order of the distribution's
// own descriptors.
func descriptorFor(m Module, osv, javaVersion string) []byte {
	return []byte(fmt.Sprintf(`# plugin-descriptor.properties of %[1]s, assembled by siemlab from Maven Central
description=%[2]s
version=%[3]s
name=%[1]s
classname=%[4]s
java.version=%[5]s
opensearch.version=%[3]s
custom.foldername=
extended.plugins=
has.native.controller=false
`, m.Name, m.Description, osv, m.Classname, javaVersion))
}

// readProperties parses the simple key=value lines of a descriptor.
func readProperties(data []byte) map[string]string {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props
}

// distJavaVersion is the java.version the distribution's own module declares (11 for 2.x).
func distJavaVersion(home string) string {
	data, err := os.ReadFile(filepath.Join(home, "modules", "transport-netty4", "plugin-descriptor.properties"))
	if err == nil {
		if v := readProperties(data)["java.version"]; v != "" {
			return v
		}
	}
	return "11"
}

// artifactInRepo is where the module's jar sits in the cache's Maven repository.
func (c *Cache) artifactInRepo(m Module, osv string) string {
	return filepath.Join(c.m2(), filepath.FromSlash(strings.ReplaceAll(m.GroupID, ".", "/")), m.ArtifactID, osv, m.ArtifactID+"-"+osv+".jar")
}

// mavenCopyDependencies copies the module's artifact and its runtime dependencies into dst through
// the cache's Maven repository: offline when the artifact is already there (a warm cache needs no
// network), online when it is not or the offline run fails (a dependency missing).
func (c *Cache) mavenCopyDependencies(ctx context.Context, m Module, osv, work, dst string) error {
	pom := filepath.Join(work, "pom-"+m.Name+".xml")
	if err := os.WriteFile(pom, pomFor(m, osv), 0o644); err != nil {
		return fmt.Errorf("module %s: %w", m.Name, err)
	}
	args := []string{"-B", "-q", "-f", pom, "-Dmaven.repo.local=" + c.m2(), "dependency:copy-dependencies",
		"-DoutputDirectory=" + dst, "-DincludeScope=runtime"}
	if _, err := os.Stat(c.artifactInRepo(m, osv)); err == nil {
		if _, err := run(ctx, os.Environ(), work, "mvn", append([]string{"-o"}, args...)...); err == nil {
			return nil
		}
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("module %s: %w", m.Name, err)
	}
	c.logger().Info("downloading through Maven", "artifact", m.GroupID+":"+m.ArtifactID+":"+osv, "module", m.Name)
	if _, err := run(ctx, os.Environ(), work, "mvn", args...); err != nil {
		return fmt.Errorf("module %s %s: %w", m.Name, osv, err)
	}
	return nil
}

// assembleModule builds home/modules/<name> for OpenSearch osv: the jars (without those the
// distribution already has in lib/, which would be jar hell), the descriptor and the policy. It
// checks that the plugin jar holds the declared class.
func (c *Cache) assembleModule(ctx context.Context, home, osv, work string, m Module) (int, error) {
	dir := filepath.Join(home, "modules", m.Name)
	if _, err := os.Stat(dir); err == nil {
		return 0, fmt.Errorf("module %s: %s already exists in the distribution", m.Name, dir)
	}
	if err := c.mavenCopyDependencies(ctx, m, osv, work, dir); err != nil {
		return 0, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("module %s: %w", m.Name, err)
	}
	jars := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".jar") {
			return 0, fmt.Errorf("module %s: unexpected dependency %s", m.Name, e.Name())
		}
		if _, err := os.Stat(filepath.Join(home, "lib", e.Name())); err == nil {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return 0, fmt.Errorf("module %s: %w", m.Name, err)
			}
			continue
		}
		jars++
	}
	main := filepath.Join(dir, m.ArtifactID+"-"+osv+".jar")
	if err := jarHasClass(main, m.Classname); err != nil {
		return 0, fmt.Errorf("module %s: %w", m.Name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin-descriptor.properties"), descriptorFor(m, osv, distJavaVersion(home)), 0o644); err != nil {
		return 0, fmt.Errorf("module %s: %w", m.Name, err)
	}
	if m.Policy != "" {
		if err := os.WriteFile(filepath.Join(dir, "plugin-security.policy"), []byte(m.Policy), 0o644); err != nil {
			return 0, fmt.Errorf("module %s: %w", m.Name, err)
		}
	}
	return jars, nil
}

// jarHasClass fails unless the jar holds the class (a wrong artifact would only fail at node start).
func jarHasClass(jar, class string) error {
	r, err := zip.OpenReader(jar)
	if err != nil {
		return fmt.Errorf("open plugin jar: %w", err)
	}
	defer r.Close()
	want := strings.ReplaceAll(class, ".", "/") + ".class"
	for _, f := range r.File {
		if f.Name == want {
			return nil
		}
	}
	return fmt.Errorf("%s has no class %s", filepath.Base(jar), class)
}

// addModules assembles every module into home and reports each one's time on c.Progress.
func (c *Cache) addModules(ctx context.Context, home, osv, work string, mods []Module) error {
	for _, m := range mods {
		t0 := time.Now()
		n, err := c.assembleModule(ctx, home, osv, work, m)
		if err != nil {
			return err
		}
		if c.Progress != nil {
			fmt.Fprintf(c.Progress, "    module %s for OpenSearch %s: %d jars (%.1fs)\n", m.Name, osv, n, time.Since(t0).Seconds())
		}
	}
	return nil
}

// replaceDir puts the directory src at dst atomically: a plain rename when dst does not exist,
// otherwise an exchange (renameat2 RENAME_EXCHANGE, so readers see either the old or the new tree,
// never none), after which the old tree, now at src, is removed.
func replaceDir(src, dst string) error {
	err := os.Rename(src, dst)
	if err == nil {
		return nil
	}
	if _, serr := os.Lstat(dst); serr != nil {
		return fmt.Errorf("replace %s: %w", dst, err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE); err != nil {
		return fmt.Errorf("replace %s: exchange: %w", dst, err)
	}
	if err := os.RemoveAll(src); err != nil {
		return fmt.Errorf("replace %s: remove old tree: %w", dst, err)
	}
	return nil
}
