package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/testenv"
)

// The real Wazuh material (ruleset, documentation examples) is read at test
// time from ../shared/reference/wazuh-real relative to the module root; it
// is Wazuh's and never copied into the project.
const realDir = "../../../shared/reference/wazuh-real"

func requireReal(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(realDir); err != nil {
		if os.Getenv("SIEMCTL_IT_REQUIRED") == "1" {
			t.Fatalf("real Wazuh material required (SIEMCTL_IT_REQUIRED=1): %v", err)
		}
		t.Skipf("real Wazuh material not found at %s (../shared/reference/wazuh-real from the module root): %v", realDir, err)
	}
	return realDir
}

// extractRuleset unpacks the real v4.9.0 ruleset tarball into a temporary
// directory and returns it (holding ruleset/ and etc/).
func extractRuleset(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range testenv.ReadTarGz(t, filepath.Join(requireReal(t), "wazuh-v4.9.0", "ruleset.tar.gz")) {
		clean := filepath.Clean(name)
		if strings.HasPrefix(clean, "..") || filepath.IsAbs(clean) {
			t.Fatalf("unexpected path in tarball: %s", name)
		}
		p := filepath.Join(dir, clean)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRealStockRuleset: the real v4.9.0 stock ruleset, checked as the stock
// ruleset, has no problem at all (analysisd loads it).
func TestRealStockRuleset(t *testing.T) {
	root := extractRuleset(t)
	rep, err := Check(Options{Dir: filepath.Join(root, "ruleset"), AsStock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stock v4.9.0: %d files, %d rules, %d decoders, %d problems (false problems on stock)", len(rep.Files), rep.Rules, rep.Decoders, len(rep.Problems))
	for _, p := range rep.Problems {
		t.Errorf("false problem on the stock ruleset: %s", p)
	}
	if len(rep.Files) != 287 || rep.Rules < 4000 || rep.Decoders < 1000 {
		t.Errorf("stock ruleset not fully read: %d files, %d rules, %d decoders", len(rep.Files), rep.Rules, rep.Decoders)
	}
}

// TestRealLocalFiles: the package's default local files and the
// documentation's examples load against the real stock ruleset with no
// problem.
func TestRealLocalFiles(t *testing.T) {
	root := extractRuleset(t)
	docs := filepath.Join(requireReal(t), "docs-examples")
	stock := filepath.Join(root, "ruleset")
	cases := map[string]func(etc string){
		"package-defaults": func(etc string) {
			copyFile(t, filepath.Join(root, "etc", "local_rules.xml"), filepath.Join(etc, "rules", "local_rules.xml"))
			copyFile(t, filepath.Join(root, "etc", "local_decoder.xml"), filepath.Join(etc, "decoders", "local_decoder.xml"))
		},
		"b2-custom-example":          func(etc string) { copyTree(t, filepath.Join(docs, "b2-custom-example"), etc) },
		"b3-overwrite-5710":          func(etc string) { copyTree(t, filepath.Join(docs, "b3-overwrite-5710"), etc) },
		"b4-sibling-decoders":        func(etc string) { copyTree(t, filepath.Join(docs, "b4-sibling-decoders"), etc) },
		"b5-decoder-syntax-examples": func(etc string) { copyTree(t, filepath.Join(docs, "b5-decoder-syntax-examples"), etc) },
		// The documented way to change a stock decoder: copy the stock file
		// to etc/decoders and exclude the original in ossec.conf.
		"b6-copied-ssh-decoders": func(etc string) {
			copyFile(t, filepath.Join(stock, "decoders", "0310-ssh_decoders.xml"), filepath.Join(etc, "decoders", "0310-ssh_decoders.xml"))
			writeFile(t, filepath.Join(etc, "ossec.conf"), "<ossec_config>\n  <ruleset>\n    <decoder_dir>ruleset/decoders</decoder_dir>\n    <decoder_exclude>ruleset/decoders/0310-ssh_decoders.xml</decoder_exclude>\n    <decoder_dir>etc/decoders</decoder_dir>\n  </ruleset>\n</ossec_config>\n")
		},
		"b7-sysmon-child-rule": func(etc string) { copyTree(t, filepath.Join(docs, "b7-sysmon-child-rule"), etc) },
	}
	// The documentation's "regex" example is the stock sudo-fields decoder
	// itself: pasted into local_decoder.xml next to the stock file it makes
	// a second sibling "sudo-fields" with a <prematch> under "sudo", which
	// analysisd refuses (2102, src/analysisd/decoders/decoders_list.c).
	want := map[string][]string{
		"b5-decoder-syntax-examples": {"decoders/local_decoder.xml:3: error (2102): decoder \"sudo-fields\""},
	}
	refused := 0
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			etc := t.TempDir()
			setup(etc)
			rep, err := Check(Options{Dir: etc, StockDir: stock})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Errors() > 0 {
				refused++
			}
			if len(rep.Files) == 0 {
				t.Errorf("no file checked")
			}
			exp := want[name]
			for i, p := range rep.Problems {
				if i >= len(exp) || !strings.HasPrefix(p.String(), exp[i]) {
					t.Errorf("false problem: %s", p)
				}
			}
			if len(rep.Problems) < len(exp) {
				t.Errorf("real load errors missed: got %v, want %v", rep.Problems, exp)
			}
		})
	}
	t.Logf("real local files refused (exit 3): %d of %d (b5 is a real analysisd load error)", refused, len(cases))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	testenv.WriteFile(t, path, content, 0o644)
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		copyFile(t, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRealLoadErrors: real load errors on real files are found with file and
// line: the community form of the Sysmon child rule (id 184667, a stock
// Sysmon id, so analysisd ignores it: 7612), and the stock ssh decoders
// copied to etc/decoders without excluding the original (2102).
func TestRealLoadErrors(t *testing.T) {
	root := extractRuleset(t)
	stock := filepath.Join(root, "ruleset")
	b, err := os.ReadFile(filepath.Join(requireReal(t), "docs-examples", "b7-sysmon-child-rule", "rules", "local_rules.xml"))
	if err != nil {
		t.Fatal(err)
	}
	etc := t.TempDir()
	writeFile(t, filepath.Join(etc, "rules", "local_rules.xml"), strings.Replace(string(b), `id="100100"`, `id="184667"`, 1))
	rep, err := Check(Options{Dir: etc, StockDir: stock})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Code != "7612" || rep.Problems[0].Line != 5 || rep.Errors() != 0 ||
		!strings.Contains(rep.Problems[0].Message, "by the stock ruleset at "+filepath.Join(stock, "rules", "0330-sysmon_rules.xml")) {
		t.Errorf("id 184667: %v", rep.Problems)
	}

	etc = t.TempDir()
	copyFile(t, filepath.Join(stock, "decoders", "0310-ssh_decoders.xml"), filepath.Join(etc, "decoders", "0310-ssh_decoders.xml"))
	rep, err = Check(Options{Dir: etc, StockDir: stock})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors() == 0 {
		t.Fatalf("copied stock decoders without decoder_exclude: no error: %v", rep.Problems)
	}
	for _, p := range rep.Problems {
		if p.File != "decoders/0310-ssh_decoders.xml" || p.Line <= 0 || (p.Code != "2102" && p.Code != "2120") {
			t.Errorf("unexpected finding: %s", p)
		}
	}
	t.Logf("copied 0310-ssh_decoders.xml without decoder_exclude: %d errors (2102)", rep.Errors())
}

// BenchmarkCheckRealStock: checking the whole real v4.9.0 ruleset as stock.
func BenchmarkCheckRealStock(b *testing.B) {
	if _, err := os.Stat(realDir); err != nil {
		b.Skipf("real Wazuh material not found at %s", realDir)
	}
	dir := b.TempDir()
	if err := exec.Command("tar", "-xzf", filepath.Join(realDir, "wazuh-v4.9.0", "ruleset.tar.gz"), "-C", dir).Run(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Check(Options{Dir: filepath.Join(dir, "ruleset"), AsStock: true}); err != nil {
			b.Fatal(err)
		}
	}
}
