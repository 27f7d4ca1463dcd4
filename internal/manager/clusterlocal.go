package manager

import (
	"context"
	"errors"
	"net/http"
)

// ClusterLocal is GET /cluster/local/info: this manager's node name, cluster name and node type.
type ClusterLocal struct {
	Node    string `json:"node"`
	Cluster string `json:"cluster"`
	Type    string `json:"type"` // master | worker
}

// ClusterLocalInfo reads which node of the manager cluster this API serves (a rolling upgrade's
// gate looks for that name in the master's /cluster/healthcheck).
func (c *Client) ClusterLocalInfo(ctx context.Context) (ClusterLocal, error) {
	env, err := callEnvelope[ClusterLocal](ctx, c, request{method: http.MethodGet, path: "/cluster/local/info"})
	if err != nil {
		return ClusterLocal{}, err
	}
	if len(env.AffectedItems) == 0 {
		return ClusterLocal{}, errors.New("GET /cluster/local/info: no node in the answer")
	}
	return env.AffectedItems[0], nil
}
