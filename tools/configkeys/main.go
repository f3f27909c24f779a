// Command configkeys prints, as JSON, the options each component of a collector build reads:
// every mapstructure-tagged field reachable from the config its factory creates, found by
// reflection on the compiled types (so embedded and squashed structs, generic wrappers,
// structs of other packages and files behind build tags are seen as the collector sees them).
//
// tools/generate-collector-schemas compiles it in a temporary module beside a generated
// factories.go (the components of one manifest, at its releases) and compares the result with
// the schema it generates: a key the collector reads and the schema lacks stops it.
package main

import (
	"encoding"
	"encoding/json"
	"os"
	"reflect"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// entry is one component of the manifest: its section and factory.
type entry struct {
	section string
	factory any
}

// node describes what a config value is made of. Kind is "struct" (Fields by key), "map"
// (string keys, Value for each value), "list" (Value for each item), "optional"
// (configoptional.Optional: Value, and Enabled when its Unmarshal takes an "enabled" key), or
// "leaf" (decoded from a scalar, or by code of its own: Type names it).
type node struct {
	Kind    string           `json:"kind"`
	Type    string           `json:"type,omitempty"`
	Fields  map[string]*node `json:"fields,omitempty"`
	Remain  bool             `json:"remain,omitempty"`
	Value   *node            `json:"value,omitempty"`
	Enabled bool             `json:"enabled,omitempty"`
}

type component struct {
	Section string `json:"section"`
	Type    string `json:"type"`
	Config  *node  `json:"config"`
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

const optionalPackage = "go.opentelemetry.io/collector/config/configoptional"

func main() {
	out := []component{}
	for _, e := range factories {
		factory := reflect.ValueOf(e.factory)
		kind := factory.MethodByName("Type").Call(nil)[0].Interface()
		config := factory.MethodByName("CreateDefaultConfig").Call(nil)[0]
		out = append(out, component{
			Section: e.section,
			Type:    kind.(interface{ String() string }).String(),
			Config:  walk(reflect.TypeOf(config.Interface()), map[reflect.Type]bool{}),
		})
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", " ")
	if err := encoder.Encode(out); err != nil {
		panic(err)
	}
}

// walk describes type t; path holds the types being described above it (a struct that
// contains itself is a leaf the second time).
func walk(t reflect.Type, path map[reflect.Type]bool) *node {
	if t == nil {
		return &node{Kind: "leaf", Type: "any"}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == optionalPackage && strings.HasPrefix(t.Name(), "Optional[") {
		value, _ := t.FieldByName("value")
		return &node{Kind: "optional", Value: walk(value.Type, path), Enabled: takesEnabled(t)}
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) || path[t] {
		return &node{Kind: "leaf", Type: t.String()}
	}
	switch t.Kind() {
	case reflect.Map:
		return &node{Kind: "map", Value: walk(t.Elem(), path)}
	case reflect.Slice, reflect.Array:
		return &node{Kind: "list", Value: walk(t.Elem(), path)}
	case reflect.Struct:
		path[t] = true
		defer delete(path, t)
		described := &node{Kind: "struct", Type: t.String(), Fields: map[string]*node{}}
		if !fields(t, described, path) && exported(t) {
			// Fields without any mapstructure tag: decoded by code of its own (Prometheus's
			// YAML structs, time.Time...), not by the collector's mapstructure decoder.
			return &node{Kind: "leaf", Type: t.String()}
		}
		return described
	default:
		return &node{Kind: "leaf", Type: t.String()}
	}
}

// fields adds the keys of struct t to described, squashed structs' keys included, and says
// whether any field carries a mapstructure tag.
func fields(t reflect.Type, described *node, path map[reflect.Type]bool) bool {
	tagged := false
	for i := range t.NumField() {
		field := t.Field(i)
		tag, ok := field.Tag.Lookup("mapstructure")
		if !ok || !field.IsExported() {
			continue
		}
		tagged = true
		name, options, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
		case hasOption(options, "remain"):
			described.Remain = true
		case hasOption(options, "squash"):
			inner := field.Type
			for inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct && !path[inner] {
				path[inner] = true
				fields(inner, described, path)
				delete(path, inner)
			}
		default:
			if name == "" {
				name = field.Name
			}
			described.Fields[name] = walk(field.Type, path)
		}
	}
	return tagged
}

// exported says whether struct t has an exported field.
func exported(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

func hasOption(options, option string) bool {
	for _, part := range strings.Split(options, ",") {
		if part == option {
			return true
		}
	}
	return false
}

// takesEnabled says whether an Optional reads an "enabled" key beside its value's options, by
// asking it: {enabled: false} must leave it without a value (an Unmarshal that ignored the key
// would give it one).
func takesEnabled(t reflect.Type) bool {
	value := reflect.New(t)
	unmarshaler, ok := value.Interface().(confmap.Unmarshaler)
	if !ok {
		return false
	}
	conf := confmap.NewFromStringMap(map[string]any{"enabled": false})
	if unmarshaler.Unmarshal(conf) != nil {
		return false
	}
	return !value.MethodByName("HasValue").Call(nil)[0].Bool()
}
