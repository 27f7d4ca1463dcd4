package indexer

import "context"

// LocalNode is the node this client's URL reaches (GET /_nodes/_local): its name and real
// OpenSearch version. A rolling upgrade records it before the node stops and waits for that name
// to be back in _nodes at a newer version.
func (c *Client) LocalNode(ctx context.Context) (NodeVersion, error) {
	ns, err := c.nodes(ctx, "/_nodes/_local", "no local node")
	if err != nil {
		return NodeVersion{}, err
	}
	return ns[0], nil
}
