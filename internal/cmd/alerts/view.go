package alerts

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/indexer"
	"github.com/siemctl/siemctl/internal/netclient"
)

// Alert is the row shown for one alert document.
type Alert struct {
	Time        *time.Time `json:"time"` // null when the document has no parsable timestamp
	Index       string     `json:"index"`
	DocID       string     `json:"doc_id"`
	RuleID      string     `json:"rule_id"`
	RuleLevel   int        `json:"rule_level"`
	Description string     `json:"description"`
	AgentID     string     `json:"agent_id"`
	AgentName   string     `json:"agent_name"`
	FullLog     string     `json:"full_log,omitempty"`
}

var timeLayouts = []string{"2006-01-02T15:04:05.000-0700", "2006-01-02T15:04:05-0700", time.RFC3339Nano}

// alertOf extracts an Alert from a hit; unknown shapes give empty fields.
func alertOf(h indexer.Hit) Alert {
	a := Alert{Index: h.Index, DocID: h.ID}
	var src struct {
		Timestamp string          `json:"timestamp"`
		At        string          `json:"@timestamp"`
		FullLog   string          `json:"full_log"`
		Rule      json.RawMessage `json:"rule"`
		Agent     struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"agent"`
	}
	if json.Unmarshal(h.Source, &src) != nil {
		return a
	}
	var rule struct {
		ID          any    `json:"id"`
		Level       any    `json:"level"`
		Description string `json:"description"`
	}
	_ = json.Unmarshal(src.Rule, &rule)
	a.RuleID = scalar(rule.ID)
	a.RuleLevel, _ = strconv.Atoi(scalar(rule.Level))
	a.Description, a.AgentID, a.AgentName, a.FullLog = rule.Description, src.Agent.ID, src.Agent.Name, src.FullLog
	for _, ts := range []string{src.Timestamp, src.At} {
		for _, l := range timeLayouts {
			if t, err := time.Parse(l, ts); err == nil {
				t = t.UTC()
				a.Time = &t
				return a
			}
		}
	}
	return a
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func timeCell(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func timePtrCell(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return timeCell(*t)
}

func agentCell(a Alert) string {
	switch {
	case a.AgentID == "" && a.AgentName == "":
		return "-"
	case a.AgentName == "":
		return a.AgentID
	}
	return a.AgentID + " " + a.AgentName
}

// queryError turns the indexer's rejection of a query_string into a usage
// error that names the query (exit 2); other errors pass through.
func queryError(q string, err error) error {
	var ne *netclient.Error
	if q != "" && errors.As(err, &ne) && ne.Status == 400 {
		return &cli.FlagError{Err: fmt.Errorf("the indexer rejected the query %q: %s; quote literal text with \"...\" or escape special characters (+ - = && || > < ! ( ) { } [ ] ^ \" ~ * ? : \\ /) with a backslash: %w", q, ne.Detail, err)}
	}
	return err
}
