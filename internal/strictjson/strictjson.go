// Package strictjson finds what makes a JSON document ambiguous: parsers
// disagree on a key named twice in one object (encoding/json takes the last,
// others the first), and encoding/json matches object keys to struct fields
// without regard to letter case, so "DryRun" or "PLAN_ID" is read as the
// field a reviewer reading the document takes for an unknown one. Request
// decoders refuse such documents rather than guess what the client meant.
package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// DuplicateKey finds an object key that appears twice in one object of a
// valid JSON document, and returns its dotted path (array elements share
// their array's path). It walks the document in place with gjson:
// encoding/json's Token API allocated for every token, and this runs on
// every PUT and PATCH.
func DuplicateKey(doc []byte) (string, bool) {
	return duplicateIn("", gjson.ParseBytes(doc))
}

func duplicateIn(path string, v gjson.Result) (found string, dup bool) {
	switch {
	case v.IsObject():
		seen := make(map[string]struct{}, 8)
		v.ForEach(func(k, val gjson.Result) bool {
			key := ObjectKey(k)
			if _, ok := seen[key]; ok {
				found, dup = path+key, true
				return false
			}
			seen[key] = struct{}{}
			if val.IsObject() || val.IsArray() {
				found, dup = duplicateIn(path+key+".", val)
			}
			return !dup
		})
	case v.IsArray():
		v.ForEach(func(_, val gjson.Result) bool {
			if val.IsObject() || val.IsArray() {
				found, dup = duplicateIn(path, val)
			}
			return !dup
		})
	}
	return found, dup
}

// ObjectKey is a key as encoding/json reads it: escapes resolved, each
// invalid UTF-8 byte and lone surrogate a U+FFFD. Plain keys are taken as
// they stand; the rare others go through encoding/json itself.
func ObjectKey(k gjson.Result) string {
	if !strings.Contains(k.Raw, "\\") && utf8.ValidString(k.Str) {
		return k.Str
	}
	var key string
	if err := json.Unmarshal([]byte(k.Raw), &key); err != nil {
		return k.Raw
	}
	return key
}

// Problem is what makes a document ambiguous, and where.
type Problem struct {
	// Path is the dotted path of the key (array elements share their
	// array's path).
	Path string
	Msg  string
}

func (p *Problem) Error() string { return p.Path + ": " + p.Msg }

// Rules say what Check refuses besides duplicate keys.
type Rules struct {
	// Type is what the document is decoded into: a key matching one of its
	// fields (or of nested structs' fields) only in letter case is refused.
	// Keys naming no field at all are left to the decoder
	// (json.Decoder.DisallowUnknownFields) or to the caller.
	Type reflect.Type
	// NoNulls refuses null anywhere: encoding/json reads it as "leave the
	// field as it is", which a reader takes for a value.
	NoNulls bool
}

// Check refuses a valid JSON document that names a key twice in one
// object, spells a field of r.Type in another letter case, or (r.NoNulls)
// holds a null. It returns the first problem in document order.
func Check(doc []byte, r Rules) *Problem {
	return check("", gjson.ParseBytes(doc), r.Type, r.NoNulls)
}

func check(path string, v gjson.Result, t reflect.Type, noNulls bool) *Problem {
	t = deref(t)
	switch {
	case v.Type == gjson.Null:
		if noNulls {
			return &Problem{Path: strings.TrimSuffix(path, "."), Msg: "null is not a value here; leave the field out instead"}
		}
	case v.IsObject():
		return checkObject(path, v, t, noNulls)
	case v.IsArray():
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t != rawMessage {
			elem = t.Elem()
		}
		var p *Problem
		v.ForEach(func(_, val gjson.Result) bool {
			p = check(path, val, elem, noNulls)
			return p == nil
		})
		return p
	}
	return nil
}

func checkObject(path string, v gjson.Result, t reflect.Type, noNulls bool) *Problem {
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		case reflect.Slice:
			// A type decoding one object as a list of one (a custom
			// UnmarshalJSON): its elements' fields apply.
			if t != rawMessage {
				if et := deref(t.Elem()); et.Kind() == reflect.Struct {
					fields = fieldsOf(et)
				}
			}
		}
	}
	seen := make(map[string]struct{}, 8)
	var p *Problem
	v.ForEach(func(k, val gjson.Result) bool {
		key := ObjectKey(k)
		if _, ok := seen[key]; ok {
			p = &Problem{Path: path + key, Msg: "named twice; parsers disagree on which one counts"}
			return false
		}
		seen[key] = struct{}{}
		next := elem
		if fields != nil {
			ft, exact := fields[key]
			if !exact {
				for name := range fields {
					if strings.EqualFold(name, key) {
						p = &Problem{Path: path + key, Msg: fmt.Sprintf("is not a field; did you mean %q? field names are case-sensitive", name)}
						return false
					}
				}
			}
			next = ft
		}
		p = check(path+key+".", val, next, noNulls)
		return p == nil
	})
	return p
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fieldCache holds each struct type's JSON field names, as encoding/json
// resolves them (json tags, embedded structs promoted, "-" skipped).
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	collectFields(t, out)
	fieldCache.Store(t, out)
	return out
}

func collectFields(t reflect.Type, out map[string]reflect.Type) {
	// Direct fields first: a field of the struct itself hides an embedded
	// struct's field of the same name, as in encoding/json.
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			if et := deref(f.Type); et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	for _, et := range embedded {
		inner := map[string]reflect.Type{}
		collectFields(et, inner)
		for name, ft := range inner {
			if _, taken := out[name]; !taken {
				out[name] = ft
			}
		}
	}
}
