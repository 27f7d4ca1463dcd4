package manager

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ---- security users ----

func userItem(u *APIUser) orderedObject {
	roles := u.Roles
	if roles == nil {
		roles = []int{}
	}
	return orderedObject{{"id", u.ID}, {"username", u.Username}, {"allow_run_as", u.AllowRunAs}, {"roles", roles}}
}

func (s *APIServer) handleGetUsers(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	if !checkParams(w, r, "user_ids", "offset", "limit", "search", "select", "sort", "q", "distinct") {
		return
	}
	offset, limit, ok := parsePage(w, q)
	if !ok {
		return
	}
	users, err := s.users.Users()
	if err != nil {
		writeProblem(w, 500, problem{Detail: "Error reading the users database", Error: 2008})
		return
	}
	var fails failures
	var picked []*APIUser
	if v := first(q, "user_ids"); v != "" {
		for _, p := range strings.Split(v, ",") {
			id, err := strconv.Atoi(p)
			if err != nil {
				badParam(w, fmt.Sprintf("'%s' is not of type 'integer'", p))
				return
			}
			found := false
			for _, u := range users {
				if u.ID == id {
					picked, found = append(picked, u), true
				}
			}
			if !found {
				fails.add(werr(5001, ""), id)
			}
		}
	} else {
		picked = users
	}
	sort.SliceStable(picked, func(i, j int) bool { return picked[i].ID < picked[j].ID })
	if v := first(q, "q"); v != "" {
		n, ok := queryParam(w, v, func(f string) bool { return slices.Contains([]string{"id", "username", "allow_run_as", "roles"}, f) })
		if !ok {
			return
		}
		var keep []*APIUser
		for _, u := range picked {
			if n.matchValues(func(f string) string { return userValue(u, f) }) {
				keep = append(keep, u)
			}
		}
		picked = keep
	}
	if v := strings.ToLower(first(q, "search")); v != "" {
		// "-x" is the complementary search: users matching nothing of x.
		neg := strings.HasPrefix(v, "-")
		v = strings.TrimPrefix(v, "-")
		var keep []*APIUser
		for _, u := range picked {
			hit := strings.Contains(strings.ToLower(u.Username), v) || strings.Contains(strconv.Itoa(u.ID), v)
			if hit != neg {
				keep = append(keep, u)
			}
		}
		picked = keep
	}
	total := len(picked)
	page := picked[min(offset, total):min(offset+limit, total)]
	items := make([]any, 0, len(page))
	for _, u := range page {
		items = append(items, userItem(u))
	}
	writeJSON(w, r, 200, affected(items, total, &fails, "All specified users were returned", "Some users were not returned", "No user was returned"))
}

func userValue(u *APIUser, f string) string {
	switch f {
	case "id":
		return strconv.Itoa(u.ID)
	case "username":
		return u.Username
	case "allow_run_as":
		return strconv.FormatBool(u.AllowRunAs)
	case "roles":
		return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(u.Roles)), ","), "[]")
	}
	return ""
}

type userBody struct {
	Username   *string `json:"username"`
	Password   *string `json:"password"`
	AllowRunAs *bool   `json:"allow_run_as"`
}

func readUserBody(w http.ResponseWriter, r *http.Request) (*userBody, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		writeProblem(w, 400, problem{Detail: "Body type is not the one specified in the content-type header", Error: 6002})
		return nil, false
	}
	var b userBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields() // the real validator refuses additional properties in the body
	if err := dec.Decode(&b); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			badParam(w, fmt.Sprintf("Additional properties are not allowed (%s was unexpected)", strings.ReplaceAll(f, `"`, "'")))
			return nil, false
		}
		badParam(w, "Invalid JSON body")
		return nil, false
	}
	return &b, true
}

func (s *APIServer) handleCreateUser(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	b, ok := readUserBody(w, r)
	if !ok {
		return
	}
	if b.Username == nil {
		badParam(w, "'username' is a required property")
		return
	}
	if b.Password == nil {
		badParam(w, "'password' is a required property")
		return
	}
	if n := len(*b.Username); n < 4 {
		badParam(w, fmt.Sprintf("'%s' is too short", *b.Username))
		return
	} else if n > 64 {
		badParam(w, fmt.Sprintf("'%s' is too long", *b.Username))
		return
	}
	if code := passwordPolicy(*b.Password); code != 0 {
		writeWazuhError(w, 400, code, "")
		return
	}
	u, err := s.users.Create(*b.Username, *b.Password)
	writeUserResult(w, r, u, err, errUserExists, 5000, *b.Username, "created")
}

func (s *APIServer) handleUpdateUser(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	id, err := strconv.Atoi(r.PathValue("user_id"))
	if err != nil {
		badParam(w, fmt.Sprintf("'%s' is not of type 'integer'", r.PathValue("user_id")))
		return
	}
	b, ok := readUserBody(w, r)
	if !ok {
		return
	}
	if b.Password == nil && b.AllowRunAs == nil {
		writeProblem(w, 400, problem{Detail: "Invalid parameter: at least one of password or allow_run_as must be specified", Error: 4001})
		return
	}
	if b.Password != nil {
		if code := passwordPolicy(*b.Password); code != 0 {
			writeWazuhError(w, 400, code, "")
			return
		}
	}
	var u *APIUser
	if b.Password != nil {
		u, err = s.users.SetPassword("", id, *b.Password, false, s.o.Now())
	} else {
		u, err = s.users.setRunAs(id, *b.AllowRunAs)
	}
	writeUserResult(w, r, u, err, errUserMissing, 5001, id, "updated")
}

// writeUserResult answers a user's creation or update (done: "created", "updated"): the user as
// the affected item, or the expected refusal (want, as Wazuh error code for the item id) as the
// failed item; any other error is the users database's 500.
func writeUserResult(w http.ResponseWriter, r *http.Request, u *APIUser, err, want error, code int, id any, done string) {
	var fails failures
	items := []any{}
	switch {
	case errors.Is(err, want):
		fails.add(werr(code, ""), id)
	case err != nil:
		writeProblem(w, 500, problem{Detail: "Error writing the users database", Error: 2008})
		return
	default:
		items = append(items, userItem(u))
	}
	writeJSON(w, r, 200, affected(items, len(items), &fails, "User was successfully "+done, "", "User could not be "+done))
}

func (s *UserStore) setRunAs(id int, v bool) (*APIUser, error) {
	var out *APIUser
	err := s.update(func(f *usersFile) error {
		for _, u := range f.Users {
			if u.ID == id {
				u.AllowRunAs, out = v, u
				return nil
			}
		}
		return errUserMissing
	})
	return out, err
}
