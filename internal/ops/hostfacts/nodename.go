package hostfacts

import (
	"path/filepath"
)

// ReadIndexerNodeName reads node.name from opensearch.yml in the indexer's config directory ("":
// not set; OpenSearch then names the node after the host).
func ReadIndexerNodeName(configDir string) (string, error) {
	m, err := flatYAML(filepath.Join(configDir, "opensearch.yml"))
	if err != nil {
		return "", err
	}
	return flatString(m, "node.name"), nil
}
