package manager

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// ---- responses ----

type problem struct {
	Title       string `json:"title"`
	Detail      string `json:"detail"`
	Remediation string `json:"remediation,omitempty"`
	Error       int    `json:"error,omitempty"`
	DAPIErrors  any    `json:"dapi_errors,omitempty"`
}

var problemTitles = map[int]string{400: "Bad Request", 401: "Unauthorized", 403: "Permission Denied", 404: "Resource Not Found",
	405: "Method Not Allowed", 429: "Too Many Requests", 500: "Wazuh Internal Error"}

func writeProblem(w http.ResponseWriter, status int, p problem) {
	if p.Title == "" {
		p.Title = problemTitles[status]
	}
	b, _ := marshalNoEscape(p)
	w.Header().Set("Content-Type", problemType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := marshalNoEscape(v)
	if err != nil {
		writeProblem(w, 500, problem{Detail: "internal error encoding response", Error: 1000})
		return
	}
	writeBody(w, r, status, b)
}

func writeBody(w http.ResponseWriter, r *http.Request, status int, b []byte) {
	if v := queryOf(r).Get("pretty"); v == "true" {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "   ") == nil {
			b = out.Bytes()
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// wazuhError is a framework error code with its message and remediation.
type wazuhError struct {
	Code        int    `json:"code"`
	Message     string `json:"message"`
	Remediation string `json:"remediation,omitempty"`
}

var errorCatalog = map[int]wazuhError{
	1403: {Message: "Not a valid sort field ", Remediation: "Please, use only allowed sort fields"},
	1407: {Message: "Query does not match expected format", Remediation: "Please, visit the official documentation (https://documentation.wazuh.com/4.9/user-manual/api/queries.html) to get more information about queries"},
	1408: {Message: "Field does not exist."},
	1409: {Message: "Invalid query operator"},
	2003: {Message: "Error in wazuhdb request"},
	1701: {Message: "Agent does not exist", Remediation: "Please, use `GET /agents?select=id,name` to find all available agents"},
	1703: {Message: "Action not available for Manager (agent 000)", Remediation: "Please, use `GET /agents?select=id,name` to find all available agents and make sure you select an agent other than 000"},
	1707: {Message: "Cannot send request, agent is not active", Remediation: "Please, check non-active agents connection and try again. Visit https://documentation.wazuh.com/4.9/user-manual/registering/index.html and https://documentation.wazuh.com/4.9/user-manual/agents/agent-connection.html to obtain more information on registering and connecting agents"},
	1724: {Message: "Not a valid select field", Remediation: "Use a valid field."},
	1726: {Message: "Wazuh authd is not running", Remediation: "Please enable authd or check if there is any error"},
	1731: {Message: "Agent is not eligible for the action to be performed", Remediation: "Please, make sure the agent meets the requirements."},
	1908: {Message: "Error validating configuration", Remediation: "Please, fix the corrupted files"},
	5000: {Message: "The user could not be created", Remediation: "Please check that the user does not exist, to do this you can use the `GET /security/users` endpoint"},
	5001: {Message: "The user does not exist", Remediation: "The user can be created, for more information please visit: https://documentation.wazuh.com/4.9/user-manual/api/rbac/reference.html#add-user"},
	5007: {Message: "Insecure user password provided", Remediation: "The password for security reasons must have at least 8 characters and at most 64 characters and contain at least one upper and lower case letter, a number and a symbol."},
	5009: {Message: "Insecure user password provided", Remediation: "The password must contain a length between 8 and 64 characters."},
}

func werr(code int, extra string) wazuhError {
	e := errorCatalog[code]
	e.Code = code
	if extra != "" {
		e.Message += ": " + extra
	}
	return e
}

func writeWazuhError(w http.ResponseWriter, status int, code int, extra string) {
	e := werr(code, extra)
	writeProblem(w, status, problem{Detail: e.Message, Remediation: e.Remediation, Error: code})
}

type failedItem struct {
	Error wazuhError `json:"error"`
	ID    []any      `json:"id"`
}

type affectedData struct {
	AffectedItems      any          `json:"affected_items"`
	TotalAffectedItems int          `json:"total_affected_items"`
	TotalFailedItems   int          `json:"total_failed_items"`
	FailedItems        []failedItem `json:"failed_items"`
}

type affectedResult struct {
	Data    affectedData `json:"data"`
	Message string       `json:"message"`
	Error   int          `json:"error"`
}

// failures collects per-item errors, grouped per distinct error, sorted by code, ids sorted.
type failures struct {
	groups map[string]*failedItem
	count  int
}

func (f *failures) add(e wazuhError, id any) {
	if f.groups == nil {
		f.groups = map[string]*failedItem{}
	}
	k := strconv.Itoa(e.Code) + "\x00" + e.Message
	g, ok := f.groups[k]
	if !ok {
		g = &failedItem{Error: e}
		f.groups[k] = g
	}
	g.ID = append(g.ID, id)
	f.count++
}

// idLess orders ids as the real API lists them: numbers by value ("999" before "1000"), else as text.
func idLess(a, b string) bool {
	if idRe.MatchString(a) && idRe.MatchString(b) && len(a) != len(b) {
		return len(strings.TrimLeft(a, "0")) < len(strings.TrimLeft(b, "0")) ||
			(len(strings.TrimLeft(a, "0")) == len(strings.TrimLeft(b, "0")) && strings.TrimLeft(a, "0") < strings.TrimLeft(b, "0"))
	}
	return a < b
}

func (f *failures) items() []failedItem {
	out := make([]failedItem, 0, len(f.groups))
	for _, g := range f.groups {
		sort.Slice(g.ID, func(i, j int) bool { return idLess(fmt.Sprint(g.ID[i]), fmt.Sprint(g.ID[j])) })
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Error.Code != out[j].Error.Code {
			return out[i].Error.Code < out[j].Error.Code
		}
		return out[i].Error.Message < out[j].Error.Message
	})
	return out
}

func envelopeCode(affected, failed int) int {
	switch {
	case failed == 0:
		return 0
	case affected == 0:
		return 1
	}
	return 2
}

func resultMessage(affected, failed int, all, some, none string) string {
	switch {
	case affected == 0:
		return none
	case failed == 0:
		return all
	}
	return some
}

func affected(items any, n int, f *failures, all, some, none string) affectedResult {
	return affectedResult{
		Data:    affectedData{AffectedItems: items, TotalAffectedItems: n, TotalFailedItems: f.count, FailedItems: f.items()},
		Message: resultMessage(n, f.count, all, some, none),
		Error:   envelopeCode(n, f.count),
	}
}
