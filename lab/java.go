package lab

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// JavaMajor is the Java feature release the lab's OpenSearch runs on.
const JavaMajor = 17

// JVMDir is where Debian's (and most distributions') JDK and JRE packages install, one home per
// package and architecture (java-17-openjdk-amd64, java-17-openjdk-arm64, …).
const JVMDir = "/usr/lib/jvm"

// ErrNoJava is returned when no Java 17 runtime is found.
var ErrNoJava = errors.New("no Java 17 runtime found")

var javaHomeOnce = sync.OnceValues(func() (string, error) { return FindJavaHome(os.Getenv("JAVA_HOME"), JVMDir) })

// JavaHome returns the Java 17 home the lab runs OpenSearch with: JAVA_HOME when it is a Java 17
// runtime, otherwise one found under /usr/lib/jvm (FindJavaHome). It is looked up once per process.
func JavaHome() (string, error) { return javaHomeOnce() }

// FindJavaHome returns the home of a Java JavaMajor runtime: javaHome (the JAVA_HOME variable)
// when it is one, otherwise the first home under jvmDir (by resolved path, symlinked aliases
// counted once) that is one. A home is a directory with an executable bin/java and a "release"
// file whose JAVA_VERSION names the major version, which every OpenJDK build ships; the
// architecture is never guessed from the directory name.
func FindJavaHome(javaHome, jvmDir string) (string, error) {
	var tried []string
	if javaHome != "" {
		major, err := javaMajor(javaHome)
		if err == nil && major == JavaMajor {
			return filepath.Clean(javaHome), nil
		}
		if err != nil {
			tried = append(tried, fmt.Sprintf("JAVA_HOME=%s: %v", javaHome, err))
		} else {
			tried = append(tried, fmt.Sprintf("JAVA_HOME=%s is Java %d", javaHome, major))
		}
	}
	entries, err := os.ReadDir(jvmDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %v", ErrNoJava, err)
	}
	seen := map[string]bool{}
	var homes []string
	for _, e := range entries {
		p, err := filepath.EvalSymlinks(filepath.Join(jvmDir, e.Name()))
		if err != nil || seen[p] {
			continue
		}
		seen[p] = true
		homes = append(homes, p)
	}
	sort.Strings(homes)
	var others []string
	for _, h := range homes {
		major, err := javaMajor(h)
		if err != nil {
			continue
		}
		if major == JavaMajor {
			return h, nil
		}
		others = append(others, fmt.Sprintf("%s is Java %d", filepath.Base(h), major))
	}
	if len(others) > 0 {
		tried = append(tried, jvmDir+": "+strings.Join(others, ", "))
	} else {
		tried = append(tried, jvmDir+": no Java home")
	}
	return "", fmt.Errorf("%w (%s): apt-get install openjdk-%d-jre-headless (scripts/install-deps.sh does), or set JAVA_HOME to a Java %d home",
		ErrNoJava, strings.Join(tried, "; "), JavaMajor, JavaMajor)
}

// javaMajor reads the major version of the Java home at dir from its release file.
func javaMajor(dir string) (int, error) {
	fi, err := os.Stat(filepath.Join(dir, "bin", "java"))
	if err != nil {
		return 0, fmt.Errorf("no bin/java")
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return 0, fmt.Errorf("bin/java is not executable")
	}
	f, err := os.Open(filepath.Join(dir, "release"))
	if err != nil {
		return 0, fmt.Errorf("no release file")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "JAVA_VERSION=")
		if !ok {
			continue
		}
		return parseJavaMajor(strings.Trim(v, `"`))
	}
	return 0, fmt.Errorf("release file has no JAVA_VERSION")
}

// parseJavaMajor maps "17.0.15", "21", "17-ea" and the old "1.8.0_392" to their feature release.
func parseJavaMajor(v string) (int, error) {
	parts := strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == '_' || r == '-' || r == '+' })
	if len(parts) == 0 {
		return 0, fmt.Errorf("JAVA_VERSION %q", v)
	}
	n, err := strconv.Atoi(parts[0])
	if err == nil && n == 1 && len(parts) > 1 {
		n, err = strconv.Atoi(parts[1])
	}
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("JAVA_VERSION %q", v)
	}
	return n, nil
}
