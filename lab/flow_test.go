package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/probeevent"
)

// The check counts per event: one lost (in the file, not indexed), one indexed twice, one stray
// (indexed, not in the file), over two pages of the composite aggregation.
func TestFlowCounts(t *testing.T) {
	dir := t.TempDir()
	alerts := filepath.Join(dir, "alerts.json")
	var file strings.Builder
	for _, seq := range []int{1, 2, 3, 4} {
		fmt.Fprintf(&file, `{"rule":{"id":"5710"},"data":{"srcuser":"%s%s"},"full_log":"Failed password for invalid user %s%s"}`+"\n",
			probeevent.UserPrefix, FlowNonce("t1", seq), probeevent.UserPrefix, FlowNonce("t1", seq))
	}
	file.WriteString(`{"rule":{"id":"5710"},"data":{"srcuser":"siemctl-probe-other-0000001"}}` + "\n")
	if err := os.WriteFile(alerts, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pages := []string{
		`{"aggregations":{"u":{"after_key":{"u":"x"},"buckets":[{"key":{"u":"siemctl-probe-t1-0000001"},"doc_count":1},{"key":{"u":"siemctl-probe-t1-0000002"},"doc_count":2}]}}}`,
		`{"aggregations":{"u":{"after_key":{"u":"y"},"buckets":[{"key":{"u":"siemctl-probe-t1-0000004"},"doc_count":1},{"key":{"u":"siemctl-probe-t1-0000009"},"doc_count":1}]}}}`,
		`{"aggregations":{"u":{"buckets":[]}}}`,
	}
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_refresh") {
			io.WriteString(w, `{"_shards":{"total":1,"successful":1,"failed":0}}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		io.WriteString(w, pages[len(bodies)-1])
	}))
	defer srv.Close()
	c := &indexerClient{base: srv.URL, user: "admin", password: "x", hc: srv.Client()}
	re := regexp.MustCompile(regexp.QuoteMeta(probeevent.UserPrefix+"t1-") + `([0-9]+)`)
	written, err := flowInFile(alerts, re)
	if err != nil {
		t.Fatal(err)
	}
	indexed, err := c.flowIndexed(t.Context(), "siem-alerts-4.x-", probeevent.UserPrefix+"t1-", re)
	if err != nil {
		t.Fatal(err)
	}
	rep := flowReport("t1", written, indexed)
	if rep.Written != 4 || rep.Indexed != 5 || rep.Lost != 1 || rep.Duplicates != 1 || rep.Stray != 1 || rep.LostSample[0] != "t1-0000003" {
		t.Fatalf("report %+v", rep)
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(bodies[1]), &second); err != nil || !strings.Contains(bodies[1], `"after":{"u":"x"}`) || !strings.Contains(bodies[0], `"prefix":{"data.srcuser":"siemctl-probe-t1-"}`) {
		t.Fatalf("paging: %v\n%s\n%s", err, bodies[0], bodies[1])
	}
}
