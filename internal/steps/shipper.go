package steps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/filetree"
	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/packages"
	"github.com/siemctl/siemctl/internal/shipper"
)

// maxTemplate bounds a fetched template.
const maxTemplate = 16 << 20

type templateParams struct {
	versionParam `yaml:",inline"`
}

func (p *templateParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	v := packages.Upstream(pl.version(p.which(), "manager"))
	src, dst, name := "<shipper.template_source>", "<shipper config_dir>/<template>-template.json", "<template>"
	if c := pl.cfg(); c != nil {
		if c.Shipper.TemplateSource != "" {
			src = strings.ReplaceAll(c.Shipper.TemplateSource, "{version}", v)
		}
		name = c.Shipper.TemplateName
		dst = TemplatePath(c.Shipper.ConfigDir, name)
	}
	return []string{"fetch " + src + " (the template of manager " + v + ")", "write " + dst, "PUT /_template/" + name}
}

type setupParams struct {
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

func (p *setupParams) Describe(pc engine.PlanContext) []string {
	pl := planningOf(pc)
	return []string{strings.Join(shipperArgv(pl, p.op()), " ")}
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

func shipperKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*templateParams]{Name: "shipper.template", Estimate: fixed[*templateParams](3 * time.Second),
			New: func() *templateParams { return &templateParams{} }, Run: runTemplate,
			Skip: func(_ context.Context, env Env, _ *templateParams) (string, bool, error) {
				d := env.Deps()
				if d.Config.Shipper.TemplateSource == "" {
					return "shipper.template_source is not set: setup --index-management loads the template the shipper has", true, nil
				}
				return "", false, nil
			}}),
		moduleKind(),
		engine.Define(Spec[*setupParams]{Name: "shipper.setup", Estimate: fixed[*setupParams](15 * time.Second),
			New: func() *setupParams { return &setupParams{} }, Run: runSetup}),
		engine.Define(Spec[*noParams]{Name: "shipper.test_output", Estimate: fixed[*noParams](3 * time.Second), ReadOnly: true, Run: runTestOutput,
			New: simple(func(pl *Planning) []string {
				return []string{strings.Join(shipperArgv(pl, shipper.OpTestOutput), " ") + " (talk to server... OK)"}
			})}),
	}
}

func fetchTemplate(ctx context.Context, d *Deps, src string) ([]byte, error) {
	return fetchCapped(ctx, d, src, maxTemplate)
}

// fetchCapped reads an http(s) URL (through Deps.Fetch where set) or a file
// (file:// optional), refusing more than limit bytes (netclient's bounded
// reads).
func fetchCapped(ctx context.Context, d *Deps, src string, limit int64) ([]byte, error) {
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		src = strings.TrimPrefix(src, "file://")
		f, err := os.Open(src)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", src, err)
		}
		defer f.Close()
		return netclient.ReadAll(f, limit, "read "+src)
	}
	if d.Fetch != nil {
		b, err := d.Fetch(ctx, src)
		if err != nil {
			return nil, err
		}
		return netclient.ReadAll(bytes.NewReader(b), limit, "fetch "+src)
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
	return netclient.ReadBody(resp, limit, "fetch "+src)
}

func runTemplate(ctx context.Context, env Env, p *templateParams) (engine.Outcome, error) {
	d := env.Deps()
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	vs, err := recordedVersions(env, p.previous())
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
	if err := checkTemplate(body, d.Config.Indexer.AlertsIndexPrefix); err != nil {
		return engine.Outcome{}, fmt.Errorf("template %s: %w", src, err)
	}
	dst := TemplatePath(c.ConfigDir, c.TemplateName)
	e := filetree.Entry{Mode: 0o644, UID: -1}
	if fi, err := os.Stat(dst); err == nil {
		e.Mode = filetree.ModeBits(fi.Mode()) | 0o044 // readable by the shipper's group and others, as the guide asks
		e.UID, e.GID = filetree.Owner(fi)
	}
	tmp := dst + ".siemctl-tmp"
	if err := writeNew(tmp, body); err != nil {
		return engine.Outcome{}, err
	}
	if err := filetree.ApplyMeta(tmp, e); err != nil {
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

// checkTemplate accepts a legacy index template (a JSON object with
// index_patterns) whose patterns cover the alerts indices
// (prefix+YYYY.MM.DD): the wrong profile's or an unrelated template is
// refused before anything is written.
func checkTemplate(body []byte, alertsPrefix string) error {
	var t struct {
		IndexPatterns json.RawMessage `json:"index_patterns"`
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if len(t.IndexPatterns) == 0 {
		return errors.New("no index_patterns: not an index template")
	}
	var pats []string
	if err := json.Unmarshal(t.IndexPatterns, &pats); err != nil {
		var one string
		if json.Unmarshal(t.IndexPatterns, &one) != nil {
			return errors.New("index_patterns is neither a string nor a list of strings")
		}
		pats = []string{one}
	}
	sample := alertsPrefix + "2000.01.01"
	for _, p := range pats {
		if ok, _ := path.Match(p, sample); ok {
			return nil
		}
	}
	return fmt.Errorf("index_patterns %v do not cover the alerts indices %s* (indexer.alerts_index_prefix): the wrong template for this stack", pats, alertsPrefix)
}

// writeNew writes a new file (mode 0600) at p; a stale file there is
// removed first, and a symlink planted there is never followed.
func writeNew(p string, data []byte) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(p)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(p)
		return err
	}
	return f.Close()
}

func runSetup(ctx context.Context, env Env, p *setupParams) (engine.Outcome, error) {
	d := env.Deps()
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

func runTestOutput(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
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
