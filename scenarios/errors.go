package scenarios

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Position is a place in a source file. Line and Column are 1-based; zero
// means unknown (for example in a scenario built in Go).
type Position struct {
	File   string
	Line   int
	Column int
}

// String renders file:line:column, leaving out the parts that are unknown.
func (p Position) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		b.WriteString(":" + strconv.Itoa(p.Line))
		if p.Column > 0 {
			b.WriteString(":" + strconv.Itoa(p.Column))
		}
	}
	return b.String()
}

// FieldError is one problem in a scenario: where it is, which field, and why.
type FieldError struct {
	Pos Position
	// Path is the field path from the scenario root, e.g. steps[3].nodes.count,
	// or for a manifest document workloads[0].documents[1].spec.selector.
	Path    string
	Message string
}

func (e FieldError) Error() string { return render(e.Pos, e.Path, e.Message) }

// Warning is a problem that does not stop the scenario from running, such as
// a legacy apiVersion that was converted.
type Warning struct {
	Pos     Position
	Path    string
	Message string
}

func (w Warning) String() string { return render(w.Pos, w.Path, w.Message) }

func render(pos Position, path, msg string) string {
	var parts []string
	if s := pos.String(); s != "" {
		parts = append(parts, s)
	}
	if path != "" {
		parts = append(parts, path)
	}
	parts = append(parts, msg)
	return strings.Join(parts, ": ")
}

// ValidationError lists every problem found in a scenario, in file order.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is and errors.As look at the individual problems.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		out[i] = fe
	}
	return out
}

func comparePos(a, b Position) int {
	return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
}

// sortErrors orders errors by position then path and drops exact duplicates.
func sortErrors(errs []FieldError) []FieldError {
	slices.SortStableFunc(errs, func(a, b FieldError) int {
		return cmp.Or(comparePos(a.Pos, b.Pos), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
	return slices.Compact(errs)
}

func sortWarnings(ws []Warning) []Warning {
	slices.SortStableFunc(ws, func(a, b Warning) int {
		return cmp.Or(comparePos(a.Pos, b.Pos), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
	return slices.Compact(ws)
}

// issues collects errors and warnings while loading and validating.
type issues struct {
	errs  []FieldError
	warns []Warning
	// stopped is set when decoding gave up; what was decoded is partial.
	stopped bool
}

func (is *issues) errorf(pos Position, path, format string, args ...any) {
	is.errs = append(is.errs, FieldError{Pos: pos, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (is *issues) warnf(pos Position, path, format string, args ...any) {
	is.warns = append(is.warns, Warning{Pos: pos, Path: path, Message: fmt.Sprintf(format, args...)})
}
