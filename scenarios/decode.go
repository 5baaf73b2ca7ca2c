package scenarios

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// nodeBudget bounds the YAML nodes one document may expand to, so that
// alias bombs fail instead of exhausting memory; real manifests are far
// smaller.
const nodeBudget = 500_000

// maxErrors bounds the errors one load reports: past that, more are noise.
const maxErrors = 200

// decoder walks yaml.v3 nodes into Go values by their json tags. Unlike
// yaml.Unmarshal it keeps going after an error, so that one pass reports
// every unknown field and every wrong type with its line and column, and it
// records where each field path was written.
type decoder struct {
	file   string
	is     *issues
	pos    map[string]Position
	budget int
	// active holds the aliases being expanded, to catch self-reference.
	active map[*yaml.Node]bool
	// lines maps parsed lines to the file's lines after placeholders
	// spanning several lines were filled in (nil: identity).
	lines []int
	// onDaemonSet, when set, decodes DaemonSets (legacy conversion).
	onDaemonSet func(d *decoder, n *yaml.Node, ds *appsv1.DaemonSet, path string)
}

func newDecoder(file string, is *issues, pos map[string]Position) *decoder {
	return &decoder{file: file, is: is, pos: pos, budget: nodeBudget, active: map[*yaml.Node]bool{}}
}

func (d *decoder) at(n *yaml.Node) Position {
	return Position{File: d.file, Line: mapLine(d.lines, n.Line), Column: n.Column}
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	switch {
	case len(d.is.errs) < maxErrors:
		d.is.errorf(d.at(n), path, format, args...)
	case len(d.is.errs) == maxErrors:
		d.is.errorf(d.at(n), path, "too many errors, stopping here")
		d.budget = -2 // decode nothing more
		d.is.stopped = true
	}
}

// resolve follows aliases and unwraps documents. It returns nil when the
// node cannot be used (the problem is reported).
func (d *decoder) resolve(n *yaml.Node, path string) *yaml.Node {
	for n != nil {
		d.budget--
		if d.budget < 0 {
			if d.budget == -1 {
				d.errorf(n, path, "document too large or too many aliases")
				d.is.stopped = true
			}
			return nil
		}
		switch n.Kind {
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		case yaml.AliasNode:
			if n.Alias == nil || d.active[n] {
				d.errorf(n, path, "alias *%s refers to itself", n.Value)
				return nil
			}
			n = n.Alias
		default:
			return n
		}
	}
	return nil
}

// field path helpers
func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func keyPath(path, key string) string { return path + "[" + key + "]" }

// pair is one key and value of a mapping.
type pair struct{ key, value *yaml.Node }

// pairs lists a mapping's entries with YAML merge keys (<<) expanded:
// explicit keys win over merged ones, earlier merges over later ones.
func (d *decoder) pairs(n *yaml.Node, path string) []pair {
	var explicit, merged []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergePairs(v, path)...)
			continue
		}
		explicit = append(explicit, pair{k, v})
	}
	// Merged entries are work the node budget does not see otherwise;
	// nested merges of aliases can multiply them.
	d.budget -= len(merged)
	if len(merged) == 0 || d.budget < 0 {
		return explicit
	}
	seen := map[string]bool{}
	for _, p := range explicit {
		seen[p.key.Value] = true
	}
	out := explicit
	for _, p := range merged {
		if !seen[p.key.Value] {
			seen[p.key.Value] = true
			out = append(out, p)
		}
	}
	return out
}

func (d *decoder) mergePairs(v *yaml.Node, path string) []pair {
	alias := v
	v = d.resolve(v, path)
	if v == nil {
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		if alias.Kind == yaml.AliasNode {
			d.active[alias] = true
			defer delete(d.active, alias)
		}
		return d.pairs(v, path)
	case yaml.SequenceNode:
		var out []pair
		for _, m := range v.Content {
			out = append(out, d.mergePairs(m, path)...)
		}
		return out
	}
	d.errorf(v, path, "merge key << needs a mapping or a list of mappings")
	return nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!null":
			return "null"
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		default:
			return fmt.Sprintf("%s %q", tag, n.Value)
		}
	}
	return "an unknown node"
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType        = reflect.TypeFor[Duration]()
	taintType           = reflect.TypeFor[corev1.Taint]()
	daemonSetType       = reflect.TypeFor[appsv1.DaemonSet]()
	thisPackage         = reflect.TypeFor[Scenario]().PkgPath()
)

// decode stores n into v (which must be settable), reporting problems under
// path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	alias := n
	n = d.resolve(n, path)
	if n == nil {
		return
	}
	if alias.Kind == yaml.AliasNode {
		d.active[alias] = true
		defer delete(d.active, alias)
	}
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = d.at(n)
	}
	null := n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
	t := v.Type()

	if t.Kind() == reflect.Pointer {
		if null {
			// A bare "waitConverged:" means the action with its defaults.
			if t.Elem().Kind() == reflect.Struct && t.Elem().PkgPath() == thisPackage {
				v.Set(reflect.New(t.Elem()))
			}
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(n, v.Elem(), path)
		return
	}
	switch t {
	case durationType:
		d.decodeDuration(n, v, path)
		return
	case taintType:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
			t, err := parseTaint(n.Value)
			if err != nil {
				d.errorf(n, path, "%v", err)
				return
			}
			v.Set(reflect.ValueOf(t))
			return
		}
	case daemonSetType:
		if d.onDaemonSet != nil {
			d.onDaemonSet(d, n, v.Addr().Interface().(*appsv1.DaemonSet), path)
			return
		}
	}
	if null && t.Kind() != reflect.Interface {
		return // as encoding/json: null leaves the zero value
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		data, ok := d.toJSON(n, path)
		if !ok {
			return
		}
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data); err != nil {
			d.errorf(n, path, "invalid value %s: %v", describe(n), cleanJSONError(err))
		}
		return
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		s, ok := d.scalarString(n, path)
		if !ok {
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			d.errorf(n, path, "invalid value %q: %v", s, err)
		}
		return
	}

	switch t.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			s, ok := d.scalarString(n, path)
			if !ok {
				return
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				d.errorf(n, path, "invalid base64 data: %v", err)
				return
			}
			v.SetBytes(b)
			return
		}
		d.decodeSlice(n, v, path)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			d.errorf(n, path, "cannot decode into %s", t)
			return
		}
		val, ok := d.toAny(n, path)
		if ok && val != nil {
			v.Set(reflect.ValueOf(val))
		}
	case reflect.String:
		s, ok := d.scalarString(n, path)
		if ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if !d.wantScalar(n, path, "a boolean", "!!bool") {
			return
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			d.errorf(n, path, "expected a boolean, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !d.wantScalar(n, path, "an integer", "!!int") {
			return
		}
		var i int64
		if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
			d.errorf(n, path, "integer %s is out of range", n.Value)
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !d.wantScalar(n, path, "a non-negative integer", "!!int") {
			return
		}
		var i uint64
		if err := n.Decode(&i); err != nil || v.OverflowUint(i) {
			d.errorf(n, path, "integer %s is out of range", n.Value)
			return
		}
		v.SetUint(i)
	case reflect.Float32, reflect.Float64:
		if !d.wantScalar(n, path, "a number", "!!int", "!!float") {
			return
		}
		var f float64
		if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || v.OverflowFloat(f) {
			d.errorf(n, path, "expected a finite number, got %s", describe(n))
			return
		}
		v.SetFloat(f)
	default:
		d.errorf(n, path, "cannot decode into %s", t)
	}
}

func (d *decoder) wantScalar(n *yaml.Node, path, what string, tags ...string) bool {
	if n.Kind != yaml.ScalarNode || !slices.Contains(tags, n.ShortTag()) {
		hint := ""
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			hint = " (remove the quotes)"
		}
		d.errorf(n, path, "expected %s, got %s%s", what, describe(n), hint)
		return false
	}
	return true
}

// scalarString accepts string scalars only: like the API server, it does not
// turn 9200 or true into "9200" or "true".
func (d *decoder) scalarString(n *yaml.Node, path string) (string, bool) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, true
		case "!!null":
			return "", true
		case "!!int", "!!float", "!!bool":
			d.errorf(n, path, "expected a string, got %s (quote it)", describe(n))
			return "", false
		}
	}
	d.errorf(n, path, "expected a string, got %s", describe(n))
	return "", false
}

func (d *decoder) decodeDuration(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		if n.Kind != yaml.ScalarNode {
			d.errorf(n, path, "expected a duration such as \"30s\", got %s", describe(n))
		}
		return
	}
	if n.Value == "0" {
		v.Set(reflect.ValueOf(Duration{}))
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		hint := ""
		if n.ShortTag() == "!!int" || n.ShortTag() == "!!float" {
			hint = " (add a unit: ms, s, m or h)"
		}
		d.errorf(n, path, "invalid duration %q%s", n.Value, hint)
		return
	}
	v.Set(reflect.ValueOf(Duration{dur}))
}

type fieldInfo struct {
	index []int
}

type structInfo struct {
	fields map[string]fieldInfo
	names  []string
}

var structCache sync.Map // reflect.Type -> *structInfo

// fieldsOf maps json names to fields, flattening embedded and ",inline"
// structs as encoding/json and Kubernetes do.
func fieldsOf(t reflect.Type) *structInfo {
	if si, ok := structCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{fields: map[string]fieldInfo{}}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			index := append(slices.Clone(prefix), i)
			ft := f.Type
			if f.Anonymous && name == "" || strings.Contains(opts, "inline") {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, index)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := si.fields[name]; !dup {
				si.fields[name] = fieldInfo{index: index}
				si.names = append(si.names, name)
			}
		}
	}
	walk(t, nil)
	slices.Sort(si.names)
	structCache.Store(t, si)
	return si
}

// fieldByIndex is reflect.Value.FieldByIndex that allocates nil embedded
// pointers on the way.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	si := fieldsOf(v.Type())
	seen := map[string]*yaml.Node{}
	for _, p := range d.pairs(n, path) {
		k := d.resolve(p.key, path)
		if k == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, path, "field names must be strings, got %s", describe(k))
			continue
		}
		name := k.Value
		fpath := joinPath(path, name)
		if prev, dup := seen[name]; dup {
			d.errorf(k, fpath, "duplicate field (first set on line %d)", prev.Line)
			continue
		}
		seen[name] = k
		fi, ok := si.fields[name]
		if !ok {
			d.errorf(k, fpath, "unknown field %q%s", name, suggest(name, si.names))
			continue
		}
		d.decode(p.value, fieldByIndex(v, fi.index), fpath)
	}
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		d.errorf(n, path, "cannot decode into %s", t)
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	seen := map[string]*yaml.Node{}
	for _, p := range d.pairs(n, path) {
		k := d.resolve(p.key, path)
		if k == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, path, "keys must be strings, got %s", describe(k))
			continue
		}
		kpath := keyPath(path, k.Value)
		if prev, dup := seen[k.Value]; dup {
			d.errorf(k, kpath, "duplicate key (first set on line %d)", prev.Line)
			continue
		}
		seen[k.Value] = k
		elem := reflect.New(t.Elem()).Elem()
		d.decode(p.value, elem, kpath)
		v.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), elem)
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list, got %s", describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(item, out.Index(i), indexPath(path, i))
	}
	v.Set(out)
}

// toAny converts a node to the values encoding/json would produce, with
// integers kept as int64.
func (d *decoder) toAny(n *yaml.Node, path string) (any, bool) {
	alias := n
	n = d.resolve(n, path)
	if n == nil {
		return nil, false
	}
	if alias.Kind == yaml.AliasNode {
		d.active[alias] = true
		defer delete(d.active, alias)
	}
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = d.at(n)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		good := true
		seen := map[string]bool{}
		for _, p := range d.pairs(n, path) {
			k := d.resolve(p.key, path)
			if k == nil {
				good = false
				continue
			}
			if k.Kind != yaml.ScalarNode {
				d.errorf(k, path, "keys must be strings, got %s", describe(k))
				good = false
				continue
			}
			kpath := joinPath(path, k.Value)
			if seen[k.Value] {
				d.errorf(k, kpath, "duplicate key")
				good = false
				continue
			}
			seen[k.Value] = true
			val, ok := d.toAny(p.value, kpath)
			good = good && ok
			m[k.Value] = val
		}
		return m, good
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		good := true
		for i, item := range n.Content {
			val, ok := d.toAny(item, indexPath(path, i))
			good = good && ok
			out[i] = val
		}
		return out, good
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err == nil {
				return b, true
			}
		case "!!int":
			var i int64
			if err := n.Decode(&i); err == nil {
				return i, true
			}
			var f float64
			if err := n.Decode(&f); err == nil && !math.IsInf(f, 0) {
				return f, true
			}
		case "!!float":
			var f float64
			if err := n.Decode(&f); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f, true
			}
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, true
		}
		d.errorf(n, path, "unsupported value %s", describe(n))
		return nil, false
	}
	d.errorf(n, path, "unsupported YAML node")
	return nil, false
}

func (d *decoder) toJSON(n *yaml.Node, path string) ([]byte, bool) {
	val, ok := d.toAny(n, path)
	if !ok {
		return nil, false
	}
	data, err := json.Marshal(val)
	if err != nil {
		d.errorf(n, path, "converting to JSON: %v", err)
		return nil, false
	}
	return data, true
}

func cleanJSONError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// suggest names a known field close to name, for typos.
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
		if dist := editDistance(name, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" || len(name) < 3 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseTaint parses key[=value]:Effect, as kubectl taint does. The effect
// may be left out ("key" or "key=value") where any effect is meant.
func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, _ := strings.Cut(s, ":")
	key, value, _ := strings.Cut(kv, "=")
	if key == "" {
		return corev1.Taint{}, fmt.Errorf("taint %q: want key[=value][:Effect]", s)
	}
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}
