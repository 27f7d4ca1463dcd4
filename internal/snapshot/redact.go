package snapshot

import (
	"reflect"

	"github.com/siemctl/siemctl/internal/redact"
)

// Redacted replaces a secret in a snapshot.
const Redacted = redact.Mark

// redactDocument passes every string of d, map keys included, through r
// (in place).
func redactDocument(r *redact.Redactor, d *Document) {
	walk(r, reflect.ValueOf(d).Elem())
}

func walk(r *redact.Redactor, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(r.String(v.String()))
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(r, v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			walk(r, v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walk(r, v.Index(i))
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
			walk(r, k)
			val := reflect.New(v.Type().Elem()).Elem()
			val.Set(iter.Value())
			walk(r, val)
			out.SetMapIndex(k, val)
		}
		v.Set(out)
	}
}
