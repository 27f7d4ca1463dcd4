package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Cardinality limits of the textfile export.
const (
	// promRecentDays: per-index series only for dated indices of the last
	// days (today included); older ones only count in their prefix.
	promRecentDays = 2
	// promMaxSeries caps any per-name family; the rest is summed into "_other".
	promMaxSeries = 200
)

// WritePrometheus writes d in the Prometheus text exposition format to path,
// atomically (temporary file in the same directory, fsync, rename), as the
// node_exporter textfile collector expects (it reads only *.prom files, and
// the temporary name does not end in .prom).
func WritePrometheus(path string, d *Document) error {
	var buf bytes.Buffer
	if err := RenderPrometheus(&buf, d); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write prometheus file: %w", err)
	}
	if err := writeAtomic(path, buf.Bytes(), 0o644, nil); err != nil {
		return fmt.Errorf("write prometheus file %s: %w", path, err)
	}
	return nil
}

type promWriter struct {
	buf bytes.Buffer
}

type sample struct {
	labels []string // name, value, name, value…
	value  float64
}

func (p *promWriter) family(name, help, typ string, samples []sample) {
	if len(samples) == 0 {
		return
	}
	fmt.Fprintf(&p.buf, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
	for _, s := range samples {
		p.buf.WriteString(name)
		if len(s.labels) > 0 {
			p.buf.WriteByte('{')
			for i := 0; i+1 < len(s.labels); i += 2 {
				if i > 0 {
					p.buf.WriteByte(',')
				}
				fmt.Fprintf(&p.buf, "%s=\"%s\"", s.labels[i], escapeLabel(s.labels[i+1]))
			}
			p.buf.WriteByte('}')
		}
		p.buf.WriteByte(' ')
		p.buf.WriteString(promFloat(s.value))
		p.buf.WriteByte('\n')
	}
}

func (p *promWriter) gauge(name, help string, v float64) {
	p.family(name, help, "gauge", []sample{{value: v}})
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

func promFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// byName turns a name → value map into samples sorted by name, keeping the
// promMaxSeries-1 largest and summing the rest under "_other".
func byName(label string, m map[string]float64) []sample {
	names := sortedKeys(m)
	var other float64
	overflow := len(names) > promMaxSeries
	if overflow {
		sort.SliceStable(names, func(i, j int) bool { return m[names[i]] > m[names[j]] })
		for _, n := range names[promMaxSeries-1:] {
			other += m[n]
		}
		names = names[:promMaxSeries-1]
		sort.Strings(names)
	}
	out := make([]sample, 0, len(names)+1)
	for _, n := range names {
		out = append(out, sample{labels: []string{label, n}, value: m[n]})
	}
	if overflow {
		out = append(out, sample{labels: []string{label, "_other"}, value: other})
	}
	return out
}

var dateSuffixRE = regexp.MustCompile(`([0-9]{4})[.-]([0-9]{2})(?:[.-]([0-9]{2}))?$|[0-9]{6}$`)

// indexPrefix strips a date (YYYY.MM.DD, YYYY-MM, …) or rollover (000001)
// suffix; it returns the prefix and, for a full date, the day.
func indexPrefix(name string) (string, time.Time, bool) {
	loc := dateSuffixRE.FindStringSubmatchIndex(name)
	if loc == nil || loc[0] == 0 {
		return name, time.Time{}, false
	}
	prefix := name[:loc[0]]
	if loc[6] >= 0 { // year, month and day
		day, err := time.Parse("2006-01-02", name[loc[2]:loc[3]]+"-"+name[loc[4]:loc[5]]+"-"+name[loc[6]:loc[7]])
		if err == nil {
			return prefix, day, true
		}
	}
	return prefix, time.Time{}, true
}

// RenderPrometheus writes d in the Prometheus text exposition format.
func RenderPrometheus(w io.Writer, d *Document) error {
	p := &promWriter{}
	taken := d.Time()
	p.gauge("siemctl_snapshot_timestamp_seconds", "When the snapshot was taken (Unix time).", float64(taken.Unix()))
	p.family("siemctl_snapshot_info", "The snapshot's host, label and siemctl version.", "gauge",
		[]sample{{labels: []string{"host", d.Host, "label", d.Label, "siemctl_version", d.SiemctlVersion}, value: 1}})
	p.gauge("siemctl_snapshot_part_errors", "Parts of the capture that could not be read.", float64(len(d.Errors)))

	var up, ver, unitActive, restarts []sample
	for _, name := range sortedKeys(d.Components) {
		c := d.Components[name]
		up = append(up, sample{labels: []string{"component", name}, value: b2f(c.Reachable)})
		ver = append(ver, sample{labels: []string{"component", name, "package_version", c.PackageVersion, "api_version", c.APIVersion}, value: 1})
		if c.Unit.Name != "" {
			unitActive = append(unitActive, sample{labels: []string{"component", name, "unit", c.Unit.Name}, value: b2f(c.Unit.ActiveState == "active")})
			restarts = append(restarts, sample{labels: []string{"component", name, "unit", c.Unit.Name}, value: float64(c.Unit.NRestarts)})
		}
	}
	p.family("siemctl_component_up", "1 if the component's API answered (shipper: its unit is active).", "gauge", up)
	p.family("siemctl_component_version_info", "Installed package and API-reported versions.", "gauge", ver)
	p.family("siemctl_unit_active", "1 if the systemd unit is active.", "gauge", unitActive)
	p.family("siemctl_unit_restarts", "Automatic restarts of the unit counted by systemd (NRestarts).", "gauge", restarts)

	ix := d.Indexer
	p.gauge("siemctl_indexer_up", "1 if the indexer answered.", b2f(ix.Reachable))
	status := ix.Status
	if _, ok := statusRank[status]; !ok || !ix.Reachable {
		status = "unknown"
	}
	var st []sample
	for _, s := range []string{"green", "yellow", "red", "unknown"} {
		st = append(st, sample{labels: []string{"status", s}, value: b2f(s == status)})
	}
	p.family("siemctl_indexer_cluster_status", "Cluster health, one-hot.", "gauge", st)
	if ix.Reachable {
		p.gauge("siemctl_indexer_nodes", "Nodes in the cluster.", float64(ix.NumberOfNodes))
		p.gauge("siemctl_indexer_unassigned_shards", "Unassigned shards (cluster health).", float64(ix.UnassignedShards))
		if ix.MaxShardsPerNode > 0 {
			p.gauge("siemctl_indexer_max_shards_per_node", "Effective cluster.max_shards_per_node.", float64(ix.MaxShardsPerNode))
		}
		shards := map[string]float64{}
		for k, v := range ix.ShardsByState {
			shards[k] = float64(v)
		}
		p.family("siemctl_indexer_shards", "Shards by state (_cat/shards).", "gauge", byName("state", shards))
		if _, failed := ix.Errors["settings"]; !failed {
			p.gauge("siemctl_indexer_allocation_all", "1 if cluster.routing.allocation.enable is all or unset.", b2f(allocationAll(ix.Settings["cluster.routing.allocation.enable"])))
		}
		if _, failed := ix.Errors["templates"]; !failed {
			p.gauge("siemctl_indexer_templates", "Index templates.", float64(len(ix.Templates)))
			p.gauge("siemctl_indexer_alerts_template_present", "1 if a template applies to today's alerts index.", b2f(len(ix.AlertsTemplates) > 0))
		}
		if _, failed := ix.Errors["pipelines"]; !failed {
			p.gauge("siemctl_indexer_pipelines", "Ingest pipelines.", float64(len(ix.Pipelines)))
		}
		if _, failed := ix.Errors["indices"]; !failed {
			count, docs, size, recent := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
			today := time.Date(taken.Year(), taken.Month(), taken.Day(), 0, 0, 0, 0, time.UTC)
			oldest := today.AddDate(0, 0, -(promRecentDays - 1))
			for _, x := range ix.Indices {
				prefix, day, _ := indexPrefix(x.Name)
				count[prefix]++
				docs[prefix] += float64(x.DocsCount)
				size[prefix] += float64(x.StoreBytes)
				if !day.IsZero() && !day.Before(oldest) {
					recent[x.Name] = float64(x.DocsCount)
				}
			}
			p.family("siemctl_indexer_indices", "Indices per name prefix (date suffix removed).", "gauge", byName("prefix", count))
			p.family("siemctl_indexer_docs", "Documents per index name prefix.", "gauge", byName("prefix", docs))
			p.family("siemctl_indexer_store_bytes", "Store size in bytes per index name prefix.", "gauge", byName("prefix", size))
			p.family("siemctl_indexer_index_docs", fmt.Sprintf("Documents of each dated index of the last %d days.", promRecentDays), "gauge", byName("index", recent))
		}
		var pctS, usedS, totalS []sample
		for _, dk := range ix.Disk {
			l := []string{"node", dk.Node}
			pctS = append(pctS, sample{labels: l, value: dk.Percent})
			usedS = append(usedS, sample{labels: l, value: float64(dk.UsedBytes)})
			totalS = append(totalS, sample{labels: l, value: float64(dk.TotalBytes)})
		}
		p.family("siemctl_indexer_disk_used_percent", "Disk used on the node's data path, percent.", "gauge", pctS)
		p.family("siemctl_indexer_disk_used_bytes", "Disk used on the node's data path.", "gauge", usedS)
		p.family("siemctl_indexer_disk_total_bytes", "Disk size of the node's data path.", "gauge", totalS)
	}

	m := d.Manager
	p.gauge("siemctl_manager_up", "1 if the manager API answered.", b2f(m.Reachable))
	if m.Reachable {
		daemons := map[string]float64{}
		for k, v := range m.Daemons {
			daemons[k] = b2f(v == "running")
		}
		p.family("siemctl_manager_daemon_running", "1 if the manager daemon is running.", "gauge", byName("daemon", daemons))
		if _, failed := m.Errors["agents"]; !failed {
			byStatus, byVersion := map[string]float64{}, map[string]float64{}
			for k, v := range m.Agents.ByStatus {
				byStatus[k] = float64(v)
			}
			for k, v := range m.Agents.ByVersion {
				byVersion[k] = float64(v)
			}
			p.family("siemctl_agents", "Agents by connection status.", "gauge", byName("status", byStatus))
			p.family("siemctl_agents_by_version", "Agents by version.", "gauge", byName("version", byVersion))
			p.gauge("siemctl_agents_total", "Registered agents (the manager itself excluded).", float64(m.Agents.Total))
		}
	}

	if d.Alerts.Reachable {
		p.gauge("siemctl_alerts_last_5m", "Alerts indexed in the last 5 minutes.", float64(d.Alerts.Last5m))
		if t, err := time.Parse(time.RFC3339Nano, d.Alerts.Newest); err == nil {
			p.gauge("siemctl_alerts_newest_timestamp_seconds", "Time of the newest alert (Unix time).", float64(t.Unix()))
		}
	}

	var hs []sample
	for _, h := range d.Health {
		hs = append(hs, sample{labels: []string{"check", h.ID}, value: healthValue(h.Status)})
	}
	p.family("siemctl_health_check_status", "Health check status: 0 OK, 1 WARN, 2 CRIT, 3 UNKNOWN.", "gauge", hs)

	_, err := w.Write(p.buf.Bytes())
	return err
}

func healthValue(s string) float64 {
	switch s {
	case "OK":
		return 0
	case "WARN":
		return 1
	case "CRIT":
		return 2
	}
	return 3
}
