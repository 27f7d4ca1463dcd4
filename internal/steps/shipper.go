package steps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/shipper"
)

// maxTemplate bounds a fetched template.
const maxTemplate = 16 << 20

type templateParams struct {
	pl      *Planning
	Version string `yaml:"version"`
}

func (p *templateParams) which() string {
	if p.Version == "" {
		return "target"
	}
	return p.Version
}

func (p *templateParams) Validate() error { return validWhich(p.Version) }

func (p *templateParams) Describe() []string {
	v := packages.Upstream(p.pl.version(p.which(), "manager"))
	src, dst, name := "<shipper.template_source>", "<shipper config_dir>/<template>-template.json", "<template>"
	if c := p.pl.cfg(); c != nil {
		if c.Shipper.TemplateSource != "" {
			src = strings.ReplaceAll(c.Shipper.TemplateSource, "{version}", v)
		}
		name = c.Shipper.TemplateName
		dst = TemplatePath(c.Shipper.ConfigDir, name)
	}
	return []string{"fetch " + src + " (the template of manager " + v + ")", "write " + dst, "PUT /_template/" + name}
}

type setupParams struct {
	pl   *Planning
	What string `yaml:"what"`
}

func (p *setupParams) op() shipper.Op {
	if p.What == "pipelines" {
		return shipper.OpSetupPipelines
	}
	return shipper.OpSetupIndexManagement
}

func (p *setupParams) Validate() error {
	if p.What != "pipelines" && p.What != "index_management" {
		return fmt.Errorf("what %q: want pipelines or index_management", p.What)
	}
	return nil
}

func (p *setupParams) Describe() []string {
	return []string{strings.Join(shipperArgv(p.pl, p.op()), " ")}
}

func shipperArgv(pl *Planning, op shipper.Op) []string {
	bin, dir, home, data := "<shipper.binary>", "<shipper.config_dir>", "", ""
	if c := pl.cfg(); c != nil {
		bin, dir, home, data = c.Shipper.Binary, c.Shipper.ConfigDir, c.Shipper.HomeDir, c.Shipper.DataDir
	}
	sh, err := shipper.New(bin, dir, nil)
	if err != nil {
		return []string{bin, string(op)}
	}
	return sh.WithPaths(home, data).Describe(op)
}

// TemplatePath is where the shipper's template file lives.
func TemplatePath(configDir, name string) string {
	return filepath.Join(configDir, name+"-template.json")
}

func shipperKinds(pl *Planning) []engine.Kind {
	return []engine.Kind{
		engine.Define(engine.Spec[*templateParams]{Name: "shipper.template",
			New: func() *templateParams { return &templateParams{pl: pl} }, Run: runTemplate,
			Skip: func(_ context.Context, env engine.Env, _ *templateParams) (string, bool, error) {
				d, err := depsOf(env)
				if err != nil {
					return "", false, err
				}
				if d.Config.Shipper.TemplateSource == "" {
					return "shipper.template_source is not set: setup --index-management loads the template the shipper has", true, nil
				}
				return "", false, nil
			}}),
		engine.Define(engine.Spec[*setupParams]{Name: "shipper.setup",
			New: func() *setupParams { return &setupParams{pl: pl} }, Run: runSetup}),
		engine.Define(engine.Spec[*noParams]{Name: "shipper.test_output", ReadOnly: true, Run: runTestOutput,
			New: simple(pl, func(pl *Planning) []string {
				return []string{strings.Join(shipperArgv(pl, shipper.OpTestOutput), " ") + " (talk to server... OK)"}
			})}),
	}
}

func fetchTemplate(ctx context.Context, d *Deps, src string) ([]byte, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		if d.Fetch != nil {
			return d.Fetch(ctx, src)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", src, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetch %s: HTTP %d", src, resp.StatusCode)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxTemplate+1))
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", src, err)
		}
		if len(b) > maxTemplate {
			return nil, fmt.Errorf("fetch %s: larger than %d bytes", src, maxTemplate)
		}
		return b, nil
	}
	src = strings.TrimPrefix(src, "file://")
	fi, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", src, err)
	}
	if fi.Size() > maxTemplate {
		return nil, fmt.Errorf("template %s: larger than %d bytes", src, maxTemplate)
	}
	return os.ReadFile(src)
}

func runTemplate(ctx context.Context, env engine.Env, p *templateParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	vs, err := recordedVersions(env, p.which() == "previous")
	if err != nil {
		return engine.Outcome{}, err
	}
	v := packages.Upstream(vs["manager"])
	if v == "" {
		return engine.Outcome{}, fmt.Errorf("no %s manager version recorded: cannot pick the template", p.which())
	}
	c := d.Config.Shipper
	src := strings.ReplaceAll(c.TemplateSource, "{version}", v)
	body, err := fetchTemplate(ctx, d, src)
	if err != nil {
		return engine.Outcome{}, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		return engine.Outcome{}, fmt.Errorf("template %s is not a JSON object: %w", src, err)
	}
	if _, ok := probe["index_patterns"]; !ok {
		return engine.Outcome{}, fmt.Errorf("template %s has no index_patterns: not an index template", src)
	}
	dst := TemplatePath(c.ConfigDir, c.TemplateName)
	e := treeEntry{Mode: 0o644, UID: -1}
	if fi, err := os.Stat(dst); err == nil {
		e.Mode = modeBits(fi.Mode()) | 0o044 // readable by the shipper's group and others, as the guide asks
		e.UID, e.GID = owner(fi)
	}
	tmp := dst + ".siemctl-tmp"
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		return engine.Outcome{}, err
	}
	if err := applyMeta(tmp, e); err != nil {
		os.Remove(tmp)
		return engine.Outcome{}, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return engine.Outcome{}, err
	}
	if err := ix.PutLegacyTemplate(ctx, c.TemplateName, body); err != nil {
		return engine.Outcome{}, fmt.Errorf("PUT /_template/%s: %w", c.TemplateName, err)
	}
	sum := sha256.Sum256(body)
	return engine.Outcome{Message: fmt.Sprintf("template %s of manager %s (sha256 %s) written to %s and loaded", c.TemplateName, v, hex.EncodeToString(sum[:])[:12], dst)}, nil
}

func runSetup(ctx context.Context, env engine.Env, p *setupParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	sh, err := d.shipper()
	if err != nil {
		return engine.Outcome{}, err
	}
	env.Waiting("%s", strings.Join(sh.Describe(p.op()), " "))
	if p.What == "pipelines" {
		err = sh.SetupPipelines(ctx)
	} else {
		err = sh.SetupIndexManagement(ctx)
	}
	if err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: "shipper " + string(p.op()) + " done"}, nil
}

func runTestOutput(ctx context.Context, env engine.Env, _ *noParams) (engine.Outcome, error) {
	d, err := depsOf(env)
	if err != nil {
		return engine.Outcome{}, err
	}
	sh, err := d.shipper()
	if err != nil {
		return engine.Outcome{}, err
	}
	rep, err := sh.TestOutput(ctx)
	var se *shipper.Error
	if errors.As(err, &se) {
		return engine.Outcome{}, engine.Pending("shipper test output: %v", err)
	}
	if err != nil {
		return engine.Outcome{}, err
	}
	if !rep.OK {
		var broken []string
		for _, h := range rep.Hosts {
			if st := h.FirstError(); st != nil {
				broken = append(broken, fmt.Sprintf("%s %s: %s %s", h.URL, st.Name, st.Status, st.Detail))
			}
		}
		return engine.Outcome{}, engine.Pending("shipper cannot talk to the indexer: %s", strings.Join(broken, "; "))
	}
	var hosts []string
	for _, h := range rep.Hosts {
		hosts = append(hosts, h.URL)
	}
	return engine.Outcome{Message: "talk to server OK: " + strings.Join(hosts, ", ")}, nil
}
