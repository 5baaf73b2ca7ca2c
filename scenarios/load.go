package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxFileSize bounds the scenario and manifest files Load reads.
const maxFileSize = 8 << 20

// Load reads, decodes and validates the scenario file at path. Manifest files
// are resolved relative to it. The error, if any, is a *ValidationError that
// lists every problem found, each with file:line:column and field path.
func Load(path string) (*Scenario, []Warning, error) {
	data, err := readOSFile(path)
	if err != nil {
		return nil, nil, &ValidationError{Errors: []FieldError{{Pos: Position{File: path}, Message: fmt.Sprintf("reading scenario: %v", err)}}}
	}
	return LoadBytes(path, data)
}

// LoadBytes is Load for a scenario already in memory; name is used in
// messages and manifest files are resolved relative to its directory.
func LoadBytes(name string, data []byte) (*Scenario, []Warning, error) {
	l := &loader{
		read: readOSFile,
		join: func(file string) (string, error) {
			if filepath.IsAbs(file) {
				return filepath.Clean(file), nil
			}
			return filepath.Join(filepath.Dir(name), filepath.FromSlash(file)), nil
		},
	}
	return l.load(name, data)
}

// LoadFS is Load for a scenario inside fsys (for example the embedded
// library). Manifest files must lie inside fsys too.
func LoadFS(fsys fs.FS, name string) (*Scenario, []Warning, error) {
	read := func(p string) ([]byte, error) {
		info, err := fs.Stat(fsys, p)
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", p)
		}
		if info.Size() > maxFileSize {
			return nil, fmt.Errorf("%s is larger than %d bytes", p, maxFileSize)
		}
		return fs.ReadFile(fsys, p)
	}
	data, err := read(name)
	if err != nil {
		return nil, nil, &ValidationError{Errors: []FieldError{{Pos: Position{File: name}, Message: fmt.Sprintf("reading scenario: %v", err)}}}
	}
	l := &loader{
		read: read,
		join: func(file string) (string, error) {
			if path.IsAbs(file) || strings.Contains(file, `\`) {
				return "", fmt.Errorf("must be a relative slash-separated path")
			}
			p := path.Join(path.Dir(name), file)
			if !fs.ValidPath(p) {
				return "", fmt.Errorf("must stay inside the scenario's file system")
			}
			return p, nil
		},
	}
	return l.load(name, data)
}

func readOSFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxFileSize)
	}
	return data, nil
}

type loader struct {
	read func(name string) ([]byte, error)
	// join resolves a workload's file against the scenario's location.
	join func(file string) (string, error)
	is   issues
	pos  map[string]Position
	// used holds the placeholders some manifest used.
	used map[string]bool
	// decoded holds field paths with decoding errors; Validate's errors on
	// the same fields would only repeat them.
	decoded []string
}

func (l *loader) load(name string, data []byte) (*Scenario, []Warning, error) {
	l.pos = map[string]Position{}
	l.used = map[string]bool{}
	s := &Scenario{Source: name, pos: l.pos}
	docs, lines := l.parse(name, data, "")
	if len(l.is.errs) > 0 {
		// Nothing else can be said about a file that does not parse.
		return nil, sortWarnings(l.is.warns), &ValidationError{Errors: sortErrors(l.is.errs)}
	}
	switch {
	case len(docs) == 0:
		l.is.errorf(Position{File: name}, "", "empty scenario: want apiVersion %s, kind %s", APIVersion, Kind)
	case len(docs) > 1:
		l.is.errorf(Position{File: name, Line: docs[1].Line, Column: docs[1].Column}, "", "a scenario file holds one YAML document, found %d", len(docs))
	}
	if len(docs) > 0 {
		d := newDecoder(name, &l.is, l.pos)
		d.lines = lines
		d.onDaemonSet = l.decodeDaemonSet
		d.decode(docs[0], reflect.ValueOf(s).Elem(), "")
	}
	for _, e := range l.is.errs {
		if poolSizePathRE.MatchString(e.Path) {
			s.sizesUnknown = true
		}
	}
	for i := range s.Workloads {
		l.loadWorkload(s, i)
	}
	for k := range s.Placeholders {
		if !l.used[k] {
			p := keyPath("placeholders", k)
			l.is.warnf(l.pos[p], p, "placeholder {%s} is not used by any manifest", k)
		}
	}
	l.noteDecoded()
	if l.is.stopped {
		return nil, sortWarnings(l.is.warns), &ValidationError{Errors: sortErrors(l.is.errs)}
	}
	SetDefaults(s)
	warns, err := Validate(s)
	l.is.warns = append(l.is.warns, warns...)
	var verr *ValidationError
	if errors.As(err, &verr) {
		for _, e := range verr.Errors {
			if !l.repeats(e.Path) {
				l.is.errs = append(l.is.errs, e)
			}
		}
	}
	warns = sortWarnings(l.is.warns)
	if len(l.is.errs) > 0 {
		return nil, warns, &ValidationError{Errors: sortErrors(l.is.errs)}
	}
	return s, warns, nil
}

// noteDecoded records the fields with errors so far, except the messages
// about a workload's file as a whole (its content is not the field).
func (l *loader) noteDecoded() {
	for _, e := range l.is.errs {
		if !strings.HasSuffix(e.Path, ".file") {
			l.decoded = append(l.decoded, e.Path)
		}
	}
}

// repeats reports whether a validation error at p concerns a field that
// already has a decoding error: the same field, a field inside it, or the
// object right around it (whose "count or fraction is required" only
// follows from the bad count).
func (l *loader) repeats(p string) bool {
	for _, d := range l.decoded {
		if d == "" {
			continue
		}
		if p == d || strings.HasPrefix(p, d) && (p[len(d)] == '.' || p[len(d)] == '[') {
			return true
		}
		if p != "" && strings.HasPrefix(d, p) && (d[len(p)] == '.' || d[len(p)] == '[') &&
			!strings.ContainsAny(strings.TrimPrefix(d[len(p)+1:], "]"), ".[") {
			return true
		}
	}
	return false
}

// poolSizePathRE matches the fields whose decoding errors leave the pool
// sizes unknown.
var poolSizePathRE = regexp.MustCompile(`^cluster(\.pools(\[\d+\](\.count)?)?)?$`)

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parse splits data into YAML documents (empty ones dropped). When parsing
// fails and lines are indented with tabs, which YAML forbids but some
// published manifests use, it expands them and warns. lines maps the lines of
// data back to the original file (nil: identity). path is the field path
// messages about the file are filed under. It returns the documents and the
// map from the lines yaml.v3 counts to the file's.
func (l *loader) parse(name string, data []byte, path string, lines ...[]int) ([]*yaml.Node, []int) {
	var lineMap []int
	if len(lines) > 0 {
		lineMap = lines[0]
	}
	yamlLines := yamlLineMap(data, lineMap)
	docs, err := parseDocs(data)
	if err != nil && hasTabIndent(data) {
		for _, width := range []int{8, 4, 2} {
			fixed, first := expandTabs(data, width)
			if docs2, err2 := parseDocs(fixed); err2 == nil {
				l.is.warnf(Position{File: name, Line: mapLine(lineMap, first), Column: 1}, path,
					"tabs in indentation expanded to spaces (tab stops every %d columns); YAML does not allow tabs there", width)
				return docs2, yamlLines
			}
		}
	}
	if err != nil {
		n, msg := yamlErrorLine(data, err)
		pos := Position{File: name}
		if n > 0 {
			pos.Line = mapLine(yamlLines, n)
		}
		l.is.errorf(pos, path, "invalid YAML: %s", msg)
	}
	return docs, yamlLines
}

// yamlParserErrors are the messages of yaml.v3's parser (not its scanner):
// it reports them with the 0-based line of where it was parsing.
var yamlParserErrors = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// yamlReaderErrors are about bytes that are not text (UTF-8 input; UTF-16
// has its own): yaml.v3 gives no line for them. A tag's %-escape that is
// not UTF-8 is a scanner error, with a line.
var yamlReaderErrors = map[string]bool{
	"control characters are not allowed": true,
	"invalid leading UTF-8 octet":        true,
	"incomplete UTF-8 octet sequence":    true,
	"invalid trailing UTF-8 octet":       true,
	"invalid length of a UTF-8 sequence": true,
	"invalid Unicode character":          true,
}

var unknownAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// yamlErrorLine returns the line (as yaml.v3 counts them, 1-based; 0 when it
// cannot be told) of a yaml.v3 parse error in data, and its message. yaml.v3
// leaves the line out when it is the first, gives its parser's errors
// 0-based, and gives none for bad characters or unknown anchors.
func yamlErrorLine(data []byte, err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	n := 0
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	switch {
	case yamlParserErrors[msg]:
		return n + 1, msg
	case n > 0:
		return n, msg
	case yamlReaderErrors[msg]:
		return badCharLine(data), msg
	case unknownAnchorRE.MatchString(msg):
		alias := []byte("*" + unknownAnchorRE.FindStringSubmatch(msg)[1])
		for i, line := range yamlLineSplit(data) {
			if bytes.Contains(line, alias) {
				return i + 1, msg
			}
		}
		return 0, msg
	case strings.HasPrefix(msg, "parser failed") || strings.HasPrefix(msg, "input error") || strings.Contains(msg, "UTF-16") || strings.Contains(msg, "surrogate"):
		return 0, msg
	}
	return 1, msg // a scanner error on the first line
}

// yamlBreak returns the length of the line break yaml.v3 sees at data[i:]
// (0: none). Besides LF and CRLF it breaks at a lone CR, NEL, LS and PS.
func yamlBreak(data []byte, i int) int {
	switch {
	case data[i] == '\n':
		return 1
	case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
		return 2
	case data[i] == '\r':
		return 1
	case bytes.HasPrefix(data[i:], []byte("\u0085")):
		return 2
	case bytes.HasPrefix(data[i:], []byte("\u2028")) || bytes.HasPrefix(data[i:], []byte("\u2029")):
		return 3
	}
	return 0
}

// yamlLineSplit splits data into the lines yaml.v3 counts.
func yamlLineSplit(data []byte) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i < len(data); {
		if n := yamlBreak(data, i); n > 0 {
			out = append(out, data[start:i])
			i += n
			start = i
			continue
		}
		i++
	}
	return append(out, data[start:])
}

// yamlLineMap maps the lines yaml.v3 counts in data to the lines of the
// file, which break at LF only (as editors and grep -n count them); lines
// maps the lines of data to the file's (nil: identity).
func yamlLineMap(data []byte, lines []int) []int {
	out := []int{mapLine(lines, 1)}
	line := 1
	for i := 0; i < len(data); {
		n := yamlBreak(data, i)
		if n == 0 {
			i++
			continue
		}
		if data[i+n-1] == '\n' {
			line++
		}
		out = append(out, mapLine(lines, line))
		i += n
	}
	return out
}

// badCharLine finds the first character yaml.v3 refuses in UTF-8 data:
// invalid UTF-8, or a control character other than tab and line breaks. It
// counts lines as yaml.v3 does.
func badCharLine(data []byte) int {
	line := 1
	for i := 0; i < len(data); {
		if n := yamlBreak(data, i); n > 0 {
			line++
			i += n
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		ok := r == '\t' || r >= 0x20 && r <= 0x7e || r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff
		if r == utf8.RuneError && size <= 1 || !ok {
			return line
		}
		i += size
	}
	return 0
}

// mapLine maps line n through lines (nil: identity). A line past the end,
// such as an error at the end of the input, is the last line.
func mapLine(lines []int, n int) int {
	switch {
	case n >= 1 && n <= len(lines):
		return lines[n-1]
	case n > len(lines) && len(lines) > 0:
		return lines[len(lines)-1]
	}
	return n
}

// parseDocs parses every document of data. The parser is third-party code
// fed arbitrary input, so a panic in it becomes an error.
func parseDocs(data []byte) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("yaml: parser failed: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if len(n.Content) == 0 || n.Content[0].Kind == yaml.ScalarNode && n.Content[0].ShortTag() == "!!null" {
			continue
		}
		docs = append(docs, &n)
	}
}

func hasTabIndent(data []byte) bool {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		indent := line[:len(line)-len(bytes.TrimLeft(line, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 {
			return true
		}
	}
	return false
}

// expandTabs replaces tabs in the leading whitespace of each line, with tab
// stops every width columns. It returns the first changed line (1-based).
func expandTabs(data []byte, width int) ([]byte, int) {
	var out bytes.Buffer
	first := 0
	for i, line := range bytes.Split(data, []byte("\n")) {
		if i > 0 {
			out.WriteByte('\n')
		}
		rest := bytes.TrimLeft(line, " \t")
		indent := line[:len(line)-len(rest)]
		if bytes.IndexByte(indent, '\t') < 0 {
			out.Write(line)
			continue
		}
		if first == 0 {
			first = i + 1
		}
		col := 0
		for _, c := range indent {
			if c == '\t' {
				col += width - col%width
			} else {
				col++
			}
		}
		out.WriteString(strings.Repeat(" ", col))
		out.Write(rest)
	}
	return out.Bytes(), first
}

// loadWorkload reads the workload's manifest file or finishes its inline
// DaemonSet.
func (l *loader) loadWorkload(s *Scenario, i int) {
	w := &s.Workloads[i]
	base := indexPath("workloads", i)
	if w.Inline != nil {
		p := joinPath(base, "inline")
		w.DaemonSets = []*appsv1.DaemonSet{w.Inline}
		w.docPaths = []string{p}
		if w.Namespace != "" {
			w.Inline.Namespace = w.Namespace
		}
	}
	if w.File == "" {
		return
	}
	fpath := joinPath(base, "file")
	at := l.pos[fpath]
	name, err := l.join(w.File)
	if err != nil {
		l.is.errorf(at, fpath, "file %q: %v", w.File, err)
		return
	}
	data, err := l.read(name)
	if err != nil {
		l.is.errorf(at, fpath, "reading manifest: %v", cleanPathError(err))
		return
	}
	values := map[string]string{}
	for k, v := range s.Placeholders {
		values[k] = v
	}
	for k, v := range w.Placeholders {
		values[k] = v
	}
	used := l.manifest(w, name, data, values, base)
	for k := range w.Placeholders {
		if !used[k] {
			p := keyPath(joinPath(base, "placeholders"), k)
			l.is.warnf(l.pos[p], p, "placeholder {%s} is not used in %s", k, name)
		}
	}
	for k := range used {
		l.used[k] = true
	}
	if len(w.DaemonSets) == 0 && !slices.ContainsFunc(l.is.errs, func(e FieldError) bool { return e.Pos.File == name }) {
		l.is.errorf(at, fpath, "%s holds no DaemonSet", name)
	}
}

// manifest fills the placeholders of a manifest file, parses its documents
// into w and returns the placeholders it used.
func (l *loader) manifest(w *Workload, name string, data []byte, values map[string]string, base string) map[string]bool {
	fpath := joinPath(base, "file")
	errs := len(l.is.errs)
	text, lines, used := l.substitute(name, fpath, data, values)
	if len(l.is.errs) > errs {
		return used // parsing text with unfilled placeholders only adds noise
	}
	docs, lines := l.parse(name, text, fpath, lines)
	for j, doc := range docs {
		l.loadDocument(w, name, joinPath(base, indexPath("documents", j)), doc, lines)
	}
	return used
}

// ParseManifest decodes a Kubernetes manifest (one or more YAML documents)
// as a workload file would be: placeholders filled, legacy DaemonSets
// converted to apps/v1, other documents kept in Objects. The DaemonSets are
// validated. The error is a *ValidationError.
func ParseManifest(name string, data []byte, placeholders map[string]string) (*Workload, []Warning, error) {
	l := &loader{pos: map[string]Position{}, used: map[string]bool{}}
	w := &Workload{File: name}
	l.manifest(w, name, data, placeholders, "")
	l.noteDecoded()
	v := &validator{s: &Scenario{Source: name, pos: l.pos}}
	for i, ds := range w.DaemonSets {
		if ds.Namespace == "" {
			ds.Namespace = metav1.NamespaceDefault
		}
		v.daemonSet(ds, w.docPaths[i])
	}
	for _, e := range v.is.errs {
		if !l.repeats(e.Path) {
			l.is.errs = append(l.is.errs, e)
		}
	}
	if len(w.DaemonSets) == 0 && len(l.is.errs) == 0 {
		l.is.errorf(Position{File: name}, "", "%s holds no DaemonSet", name)
	}
	warns := sortWarnings(append(l.is.warns, v.is.warns...))
	if len(l.is.errs) > 0 {
		return nil, warns, &ValidationError{Errors: sortErrors(l.is.errs)}
	}
	return w, warns, nil
}

func cleanPathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

var legacyAPIVersions = map[string]bool{"extensions/v1beta1": true, "apps/v1beta2": true}

func (l *loader) loadDocument(w *Workload, file, path string, doc *yaml.Node, lines []int) {
	d := newDecoder(file, &l.is, l.pos)
	d.lines = lines
	d.onDaemonSet = l.decodeDaemonSet
	var tm metav1.TypeMeta
	root := d.resolve(doc, path)
	if root == nil {
		return
	}
	if root.Kind != yaml.MappingNode {
		d.errorf(root, path, "a manifest document must be a mapping, got %s", describe(root))
		return
	}
	for _, p := range d.pairs(root, path) {
		if p.key.Kind == yaml.ScalarNode && p.value.Kind == yaml.ScalarNode {
			switch p.key.Value {
			case "apiVersion":
				tm.APIVersion = p.value.Value
			case "kind":
				tm.Kind = p.value.Value
			}
		}
	}
	switch {
	case tm.Kind == "":
		d.errorf(root, path, "kind is required")
	case tm.APIVersion == "":
		d.errorf(root, path, "apiVersion is required")
	case tm.Kind == "DaemonSet" && (tm.APIVersion == "apps/v1" || legacyAPIVersions[tm.APIVersion]):
		ds := &appsv1.DaemonSet{}
		d.decode(doc, reflect.ValueOf(ds).Elem(), path)
		if w.Namespace != "" {
			ds.Namespace = w.Namespace
		}
		w.DaemonSets = append(w.DaemonSets, ds)
		w.docPaths = append(w.docPaths, path)
	case tm.Kind == "DaemonSet":
		d.errorf(root, joinPath(path, "apiVersion"), "unsupported DaemonSet apiVersion %q: want apps/v1 (extensions/v1beta1 and apps/v1beta2 are converted)", tm.APIVersion)
	default:
		val, ok := d.toAny(doc, path)
		m, isMap := val.(map[string]any)
		if !ok || !isMap {
			return
		}
		obj := &unstructured.Unstructured{Object: m}
		if w.Namespace != "" && (obj.GetNamespace() != "" || namespacedKinds[obj.GetKind()]) {
			obj.SetNamespace(w.Namespace)
		}
		w.Objects = append(w.Objects, obj)
	}
}

// namespacedKinds are kinds that live in a namespace even when a manifest
// leaves metadata.namespace out (so a workload's namespace applies).
var namespacedKinds = map[string]bool{
	"ServiceAccount": true, "ConfigMap": true, "Secret": true, "Service": true,
	"Role": true, "RoleBinding": true, "PodDisruptionBudget": true,
}

// decodeDaemonSet decodes a DaemonSet of apps/v1 or of a legacy version,
// converting the latter as the API server would have served it.
func (l *loader) decodeDaemonSet(d *decoder, n *yaml.Node, ds *appsv1.DaemonSet, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	var apiVersion *yaml.Node
	var spec *yaml.Node
	for _, p := range d.pairs(n, path) {
		switch p.key.Value {
		case "apiVersion":
			apiVersion = p.value
		case "spec":
			spec = p.value
		}
	}
	version := ""
	if apiVersion != nil {
		version = apiVersion.Value
	}
	legacy := legacyAPIVersions[version]
	if legacy && spec != nil && spec.Kind == yaml.MappingNode {
		// templateGeneration is gone from apps/v1; the controller tracks it
		// in the pod-template-generation label instead.
		for i := 0; i+1 < len(spec.Content); i += 2 {
			if spec.Content[i].Value == "templateGeneration" {
				l.is.warnf(d.at(spec.Content[i]), joinPath(path, "spec.templateGeneration"), "dropped: apps/v1 has no templateGeneration")
				spec.Content = append(spec.Content[:i:i], spec.Content[i+2:]...)
				break
			}
		}
	}
	d.decodeStruct(n, reflect.ValueOf(ds).Elem(), path)
	switch {
	case version == "":
		d.errorf(n, joinPath(path, "apiVersion"), "apiVersion is required (apps/v1)")
	case legacy:
		l.is.warnf(d.at(apiVersion), joinPath(path, "apiVersion"), "%s DaemonSet %q converted to apps/v1", version, ds.Name)
	case version != "apps/v1":
		d.errorf(apiVersion, joinPath(path, "apiVersion"), "unsupported DaemonSet apiVersion %q: want apps/v1 (extensions/v1beta1 and apps/v1beta2 are converted)", version)
	}
	if ds.Kind == "" {
		d.errorf(n, joinPath(path, "kind"), "kind is required (DaemonSet)")
	} else if ds.Kind != "DaemonSet" {
		d.errorf(n, joinPath(path, "kind"), "kind %q: want DaemonSet", ds.Kind)
	}
	ds.APIVersion, ds.Kind = "apps/v1", "DaemonSet"
	if version != "extensions/v1beta1" {
		return
	}
	// extensions/v1beta1 defaulted the selector from the template labels
	// and the update strategy to OnDelete; apps/v1 does neither.
	if ds.Spec.Selector == nil && len(ds.Spec.Template.Labels) > 0 {
		ml := make(map[string]string, len(ds.Spec.Template.Labels))
		for k, v := range ds.Spec.Template.Labels {
			ml[k] = v
		}
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: ml}
		l.is.warnf(d.at(n), joinPath(path, "spec.selector"), "defaulted from the template labels, as extensions/v1beta1 did")
	}
	if ds.Spec.UpdateStrategy.Type == "" {
		ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
		l.is.warnf(d.at(n), joinPath(path, "spec.updateStrategy.type"), "defaulted to OnDelete, as extensions/v1beta1 did")
	}
}

// placeholderRE matches {NAME}. ${NAME} is left alone: that is shell syntax
// inside commands.
var placeholderRE = regexp.MustCompile(`\{([A-Z][A-Z0-9_]*)\}`)

// substitute fills {NAME} placeholders as text. Lines that are comments are
// left alone. A multi-line value is indented like the placeholder's line.
// It returns the new text, the original line of each new line, and the
// placeholders it used. Unfilled placeholders are errors.
func (l *loader) substitute(file, path string, data []byte, values map[string]string) ([]byte, []int, map[string]bool) {
	used := map[string]bool{}
	var out bytes.Buffer
	var lines []int
	for i, line := range strings.Split(string(data), "\n") {
		if i > 0 {
			out.WriteByte('\n')
		}
		lines = append(lines, i+1)
		trimmed := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(trimmed, "#") || !strings.Contains(line, "{") {
			out.WriteString(line)
			continue
		}
		indent := line[:len(line)-len(trimmed)]
		last := 0
		for _, m := range placeholderRE.FindAllStringSubmatchIndex(line, -1) {
			if m[0] > 0 && line[m[0]-1] == '$' {
				continue
			}
			out.WriteString(line[last:m[0]])
			last = m[1]
			key := line[m[2]:m[3]]
			val, ok := values[key]
			if !ok {
				col := len([]rune(line[:m[0]])) + 1
				l.is.errorf(Position{File: file, Line: i + 1, Column: col}, path, "placeholder {%s} is not filled: add it to placeholders", key)
				out.WriteString(line[m[0]:m[1]])
				continue
			}
			used[key] = true
			val = strings.TrimRight(val, "\n")
			for j, vl := range strings.Split(val, "\n") {
				if j > 0 {
					out.WriteString("\n" + indent)
					lines = append(lines, i+1)
				}
				out.WriteString(vl)
			}
		}
		out.WriteString(line[last:])
	}
	return out.Bytes(), lines, used
}
