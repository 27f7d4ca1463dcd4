package diagnose

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/siemctl/siemctl/internal/units"
)

// IndexerLogFile is the indexer's own log as the opensearch.yml in configDir
// places it, <path.logs>/<cluster.name>.log ("" where it sets no absolute
// path.logs: the log is then where the package put it).
func IndexerLogFile(configDir string) string {
	y := readIndexerYAML(filepath.Join(configDir, "opensearch.yml"))
	if !filepath.IsAbs(y["path.logs"]) {
		return ""
	}
	return indexerLogOf(y)
}

// IndexerIdentity is the cluster.name and node.name the opensearch.yml in
// configDir sets ("" each where it sets none, or the file cannot be read):
// what the indexer's GET / must say.
func IndexerIdentity(configDir string) (cluster, node string) {
	if configDir == "" {
		return "", ""
	}
	y := readIndexerYAML(filepath.Join(configDir, "opensearch.yml"))
	return y["cluster.name"], y["node.name"]
}

// IndexerPathData is the path.data the opensearch.yml in configDir sets
// ("" where it sets none or cannot be read).
func IndexerPathData(configDir string) string {
	if configDir == "" {
		return ""
	}
	return readIndexerYAML(filepath.Join(configDir, "opensearch.yml"))["path.data"]
}

// securityLoadFailure is the security plugin's failed read of its
// configuration from its index ("[ERROR][o.o.s.c.ConfigurationLoaderSecurity7]
// … Failure No shard available … retrieving configuration").
var securityLoadFailure = regexp.MustCompile(`o\.o\.s\.c\.(ConfigurationLoaderSecurity7|ConfigurationRepository)\s*\].*(Failure|Exception)`)

// securityLoadTail is how many of the log's last lines SecurityLoadFailed
// reads: a start logs a line per index (thousands on a large node) before
// the plugin's first read.
const securityLoadTail = 20000

// SecurityLoadFailed returns the line of the indexer's log (logFile) where
// the security plugin, since the node's last start, failed to read its
// configuration ("" when it did not, or the start is not in the log's tail).
// The plugin's first read races the recovery of its index's shard; when it
// loses, it tries again only some 13 s later, while the security init tool
// initialises it within seconds.
func SecurityLoadFailed(logFile string) (string, error) {
	lines, err := units.TailFile(logFile, securityLoadTail)
	if err != nil {
		return "", err
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if !nodeStarted.MatchString(strings.TrimSpace(lines[i])) {
			continue
		}
		for _, l := range lines[i+1:] {
			if securityLoadFailure.MatchString(l) {
				return strings.TrimSpace(l), nil
			}
		}
		return "", nil
	}
	return "", nil
}
