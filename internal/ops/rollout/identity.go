package rollout

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/ops/hostfacts"
	"github.com/siemctl/siemctl/internal/rules"
)

// HostIdentity says which entries of the order are this host's, from what its components are
// configured with (docs/distributed.md): for the components key's indexer, node.name of
// its opensearch.yml (unset: the host name, as OpenSearch does); for the manager, <node_name> of
// its ossec.conf's <cluster> (a disabled or absent cluster: manager.nodes' only name, else the
// host name); for the dashboard, the host of dashboard.url. host names the holder in the record
// ("" : os.Hostname).
func HostIdentity(cfg *config.Config, host string) (Identity, error) {
	if host == "" {
		h, err := os.Hostname()
		if err != nil {
			return Identity{}, fmt.Errorf("host name: %w", err)
		}
		host = h
	}
	id := Identity{Host: host}
	var errs []error
	if cfg.Runs("indexer") {
		name, err := hostfacts.ReadIndexerNodeName(cfg.Indexer.ConfigDir)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("this host's indexer node name: %w (set node.name in opensearch.yml, or remove indexer from the components key)", err))
		case name == "":
			name = host
			fallthrough
		default:
			id.Names = append(id.Names, Key(KindIndexer, name))
		}
	}
	if cfg.Runs("manager") {
		name, err := ManagerNodeName(cfg)
		if err != nil {
			errs = append(errs, err)
		} else {
			if name == "" {
				name = host
			}
			id.Names = append(id.Names, Key(KindManager, name))
		}
	}
	if cfg.Runs("dashboard") {
		name, err := DashboardName(cfg.Dashboard.URL)
		if err != nil {
			errs = append(errs, err)
		} else {
			id.Names = append(id.Names, Key(KindDashboard, name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return id, err
	}
	if len(id.Names) == 0 {
		return id, fmt.Errorf("%w: this host runs none of indexer, manager, dashboard (the components key): it has no turn in a rolling upgrade", ErrInvalid)
	}
	return id, nil
}

// ManagerNodeName is this host's manager node name: <node_name> of an enabled <cluster> in
// install_dir/etc/ossec.conf; for a disabled or absent cluster manager.nodes' only name, else the
// disabled section's <node_name> ("" when none: the caller decides).
func ManagerNodeName(cfg *config.Config) (string, error) {
	path := filepath.Join(cfg.Manager.InstallDir, "etc", "ossec.conf")
	c, err := rules.ReadManagerCluster(path)
	if err != nil {
		return "", fmt.Errorf("this host's manager node name: %w", err)
	}
	if c.Found && !c.Disabled && c.NodeName != "" {
		return c.NodeName, nil
	}
	if len(cfg.Manager.Nodes) == 1 {
		return cfg.Manager.Nodes[0], nil
	}
	return c.NodeName, nil
}

// DashboardName is a dashboard's entry node name: the host of its URL.
func DashboardName(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("dashboard.url %q has no host: set it to this host's dashboard URL", rawURL)
	}
	return u.Hostname(), nil
}
