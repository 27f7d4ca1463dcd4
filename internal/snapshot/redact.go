package snapshot

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Redacted replaces a secret wherever it appears in a snapshot.
const Redacted = "[REDACTED]"

// redactor removes secrets, and their usual encodings (URL, JSON, Go-quoted,
// base64), from strings.
type redactor struct {
	r *strings.Replacer
}

func newRedactor(secrets []string) *redactor {
	seen := map[string]bool{}
	var forms []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			forms = append(forms, s)
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		if b, err := json.Marshal(s); err == nil {
			add(strings.Trim(string(b), `"`))
		}
		add(strings.Trim(strconv.Quote(s), `"`))
		add(base64.StdEncoding.EncodeToString([]byte(s)))
		add(base64.RawStdEncoding.EncodeToString([]byte(s)))
	}
	if len(forms) == 0 {
		return &redactor{}
	}
	// Longer forms first: at one position the replacer takes the first match.
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	return &redactor{r: strings.NewReplacer(pairs...)}
}

func (r *redactor) String(s string) string {
	if r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Document redacts every string of d in place, map keys included.
func (r *redactor) Document(d *Document) {
	if r.r == nil {
		return
	}
	r.walk(reflect.ValueOf(d).Elem())
}

func (r *redactor) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(r.String(v.String()))
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			r.walk(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			r.walk(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			r.walk(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(iter.Key())
			r.walk(k)
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(iter.Value())
			r.walk(val)
			out.SetMapIndex(k, val)
		}
		v.Set(out)
	}
}
