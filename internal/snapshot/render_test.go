package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/golden"
)

func TestRenderListAndShow(t *testing.T) {
	s, _ := newStore(t)
	down := healthySource()
	down.ixErr = errors.New("connection refused")
	opts := fixedOpts()
	opts.Now = func() time.Time { return fixedNow.Add(time.Hour) }
	saveAll(t, s, docAt(t, fixedNow, 1, "pre-upgrade"), mustCapture(t, down, opts))
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for i := range list {
		list[i].Path = "/var/lib/siemctl/snapshots/" + list[i].ID + ".json" // stable golden
	}
	var js, empty bytes.Buffer
	if err := RenderListJSON(&js, list); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "list.json", js.Bytes())
	if err := RenderListJSON(&empty, nil); err != nil || strings.TrimSpace(empty.String()) != "[]" {
		t.Errorf("empty list JSON = %q", empty.String())
	}

	for name, ref := range map[string]string{"show_healthy.txt": "previous", "show_down.txt": "latest"} {
		d, err := s.Get(ref)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := RenderDocumentText(&buf, d, false); err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, name, buf.Bytes())
		var full bytes.Buffer
		if err := RenderDocumentJSON(&full, d); err != nil {
			t.Fatal(err)
		}
		var back Document
		if err := json.Unmarshal(full.Bytes(), &back); err != nil || back.ID != d.ID {
			t.Errorf("show JSON: %v", err)
		}
	}
}

func TestRenderDiffEmptyJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderDiffJSON(&buf, Report{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"changes": []`) || strings.Contains(buf.String(), "null") {
		t.Errorf("empty report JSON:\n%s", buf.String())
	}
}
