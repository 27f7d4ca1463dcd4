package manager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/siemctl/siemctl/internal/netclient"
)

// Result status of an affected-items envelope (the top-level "error").
const (
	StatusComplete = 0 // no failures
	StatusFailed   = 1 // nothing affected, at least one failure
	StatusPartial  = 2 // some affected, some failed
)

// Envelope is the manager's AffectedItemsWazuhResult:
//
//	{"data": {"affected_items": [...], "total_affected_items": N,
//	          "total_failed_items": M, "failed_items": [...]},
//	 "message": "...", "error": 0|1|2}
//
// A WazuhResult ({"data": {...}, "error": 0}) decodes with Result[T].
type Envelope[T any] struct {
	AffectedItems      []T
	TotalAffectedItems int
	TotalFailedItems   int
	FailedItems        []ItemError
	Message            string
	Error              int
}

// Err returns nil when nothing failed, else a *PartialError listing the
// failures.
func (e *Envelope[T]) Err() error {
	if len(e.FailedItems) == 0 {
		return nil
	}
	return &PartialError{Message: e.Message, Failed: e.FailedItems}
}

type wireData[T any] struct {
	AffectedItems      []T             `json:"affected_items"`
	TotalAffectedItems flexInt         `json:"total_affected_items"`
	TotalFailedItems   flexInt         `json:"total_failed_items"`
	FailedItems        []wireItemError `json:"failed_items"`
}

type wireEnvelope[T any] struct {
	Data    *wireData[T] `json:"data"`
	Message string       `json:"message"`
	Error   flexInt      `json:"error"`
}

type wireItemError struct {
	Error struct {
		Code        flexInt `json:"code"`
		Message     string  `json:"message"`
		Remediation string  `json:"remediation"`
	} `json:"error"`
	ID []flexString `json:"id"`
}

func (w wireItemError) item() ItemError {
	ids := make([]string, 0, len(w.ID))
	for _, id := range w.ID {
		ids = append(ids, string(id))
	}
	return ItemError{Code: int(w.Error.Code), Message: w.Error.Message, Remediation: w.Error.Remediation, IDs: ids}
}

func itemErrors(w []wireItemError) []ItemError {
	if len(w) == 0 {
		return nil
	}
	out := make([]ItemError, 0, len(w))
	for _, x := range w {
		out = append(out, x.item())
	}
	return out
}

// DecodeEnvelope decodes an affected-items envelope. A body that is not one
// (truncated, not an object, no "data") is an error.
func DecodeEnvelope[T any](r io.Reader) (*Envelope[T], error) {
	var w wireEnvelope[T]
	if err := json.NewDecoder(r).Decode(&w); err != nil {
		return nil, fmt.Errorf("decode envelope: %w", err)
	}
	if w.Data == nil {
		return nil, errors.New("decode envelope: no data object")
	}
	return &Envelope[T]{
		AffectedItems:      w.Data.AffectedItems,
		TotalAffectedItems: int(w.Data.TotalAffectedItems),
		TotalFailedItems:   int(w.Data.TotalFailedItems),
		FailedItems:        itemErrors(w.Data.FailedItems),
		Message:            w.Message,
		Error:              int(w.Error),
	}, nil
}

// DecodeResult decodes a WazuhResult ({"data": {...}, "error": 0}) into T.
func DecodeResult[T any](r io.Reader) (T, error) {
	var w struct {
		Data  *T      `json:"data"`
		Error flexInt `json:"error"`
	}
	var zero T
	if err := json.NewDecoder(r).Decode(&w); err != nil {
		return zero, fmt.Errorf("decode result: %w", err)
	}
	if w.Data == nil {
		return zero, errors.New("decode result: no data object")
	}
	return *w.Data, nil
}

// DecodeProblem turns an error body (application/problem+json, or anything
// else) into an *APIError. It never fails: an unparseable body becomes the
// Detail snippet.
func DecodeProblem(status int, body []byte) *APIError {
	e := &APIError{Status: status}
	var p struct {
		Title       any             `json:"title"`
		Detail      any             `json:"detail"`
		Remediation any             `json:"remediation"`
		Error       json.RawMessage `json:"error"`
		Code        json.RawMessage `json:"code"`
		Message     any             `json:"message"`
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &p) != nil {
		e.Detail = snippet(body)
		return e
	}
	e.Title = textOf(p.Title)
	e.Detail = textOf(p.Detail)
	if e.Detail == "" {
		e.Detail = textOf(p.Message)
	}
	e.Remediation = textOf(p.Remediation)
	e.Code = codeOf(p.Error)
	if e.Code == 0 {
		e.Code = codeOf(p.Code)
	}
	return e
}

// snippet is one line of at most 200 bytes of body, for error details.
func snippet(body []byte) string { return netclient.Snippet(body, 200) }

// textOf renders a JSON scalar as text; objects and arrays are compacted.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return ""
		}
		return snippet(b)
	}
}

// codeOf reads a manager code that may be a number or a numeric string.
func codeOf(raw json.RawMessage) int {
	var n flexInt
	if len(raw) == 0 || json.Unmarshal(raw, &n) != nil {
		return 0
	}
	return int(n)
}

// flexInt accepts a JSON number or a numeric string ("40907"); anything else
// is 0 for strings and an error for other types.
type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*f = 0
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		n, err := strconv.Atoi(strings.TrimSpace(str))
		if err != nil {
			*f = 0
			return nil
		}
		*f = flexInt(n)
		return nil
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return fmt.Errorf("expected a number, got %s", snippet(b))
	}
	if x > 1<<53 || x < -(1<<53) {
		return fmt.Errorf("number out of range: %s", snippet(b))
	}
	*f = flexInt(int(x))
	return nil
}

// flexString accepts a JSON string or number (user ids are numbers, agent
// ids strings).
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		*f = flexString(str)
		return nil
	}
	if s == "null" {
		*f = ""
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("expected a string or number id, got %s", snippet(b))
	}
	*f = flexString(n.String())
	return nil
}
