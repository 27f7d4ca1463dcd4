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
