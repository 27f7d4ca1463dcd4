package rules

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/siemctl/siemctl/lab/emu/manager"
)

// TestReadManagerCluster: the <cluster> section as the manager's own parser reads it (the packaged
// file as the lab's manager writes it, several roots, comments), its absence, and a file the
// manager would refuse.
func TestReadManagerCluster(t *testing.T) {
	cases := []struct {
		name    string
		conf    string
		want    ManagerCluster
		wantErr bool
	}{
		{"stock single manager", string(manager.StockOssecConf(manager.StockOptions{AgentPort: 1514, EnrollmentPort: 1515, IndexerPort: 9200})), ManagerCluster{Found: true, Name: "wazuh", NodeName: "node01", NodeType: "master", Disabled: true}, false},
		{"worker in a second root, with comments", `<ossec_config><remote><port>1514</port></remote></ossec_config>
<!-- cluster -- of the site -->
<ossec_config>
  <cluster>
    <name>wazuh</name>
    <node_name> worker-2 </node_name>
    <node_type>worker</node_type>
    <disabled>no</disabled>
  </cluster>
</ossec_config>
`, ManagerCluster{Found: true, Name: "wazuh", NodeName: "worker-2", NodeType: "worker"}, false},
		{"no cluster section", "<ossec_config><global/></ossec_config>\n", ManagerCluster{}, false},
		{"unclosed element", "<ossec_config><cluster><node_name>x</node_name>\n", ManagerCluster{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ossec.conf")
			if err := os.WriteFile(p, []byte(tc.conf), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadManagerCluster(p)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := ReadManagerCluster(filepath.Join(t.TempDir(), "absent.conf")); !os.IsNotExist(err) {
		t.Fatalf("a missing file: %v", err)
	}
}

// TestReadAgentUpgrade: the stock file (no max_threads: 8), a set value, 0 (one per core, at most 256),
// a value the manager refuses, and a missing file (the default, with the error).
func TestReadAgentUpgrade(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "ossec.conf")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stock := write(string(manager.StockOssecConf(manager.StockOptions{AgentPort: 1514, EnrollmentPort: 1515, IndexerPort: 9200})))
	if u, err := ReadAgentUpgrade(stock, 2); err != nil || u.MaxThreads != 8 {
		t.Errorf("stock: %+v %v", u, err)
	}
	for conf, want := range map[string]int{"<max_threads>32</max_threads>": 32, "<max_threads>0</max_threads>": 2} {
		p := write("<ossec_config><agent-upgrade>" + conf + "</agent-upgrade></ossec_config>")
		if u, err := ReadAgentUpgrade(p, 2); err != nil || u.MaxThreads != want || !u.Found {
			t.Errorf("%s: %+v %v", conf, u, err)
		}
	}
	if u, _ := ReadAgentUpgrade(write("<ossec_config><agent-upgrade><max_threads>0</max_threads></agent-upgrade></ossec_config>"), 512); u.MaxThreads != 256 {
		t.Errorf("0 on 512 cores: %d", u.MaxThreads)
	}
	if _, err := ReadAgentUpgrade(write("<ossec_config><agent-upgrade><max_threads>300</max_threads></agent-upgrade></ossec_config>"), 2); err == nil {
		t.Error("300 accepted")
	}
	if u, err := ReadAgentUpgrade(filepath.Join(dir, "none"), 2); err == nil || u.MaxThreads != 8 {
		t.Errorf("missing: %+v %v", u, err)
	}
}
