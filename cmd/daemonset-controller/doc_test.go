package main

import (
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// TestDocMentionsEveryFlag keeps the command's doc comment, its manual, in
// step with the flags: every flag it names exists, and every flag exists in it.
func TestDocMentionsEveryFlag(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	fs := pflag.NewFlagSet("doc", pflag.ContinueOnError)
	newOptions().addFlags(fs)
	var defined []string
	fs.VisitAll(func(fl *pflag.Flag) { defined = append(defined, fl.Name) })
	mentioned := map[string]bool{}
	for _, m := range regexp.MustCompile(`--([a-z][a-z0-9-]+)`).FindAllStringSubmatch(doc, -1) {
		mentioned[m[1]] = true
	}
	for name := range mentioned {
		if !slices.Contains(defined, name) && name != "vmodule" && name != "controllers" {
			t.Errorf("the doc names --%s, which is not a flag", name)
		}
	}
	for _, name := range defined {
		if !mentioned[name] {
			t.Errorf("flag --%s is missing from the doc comment", name)
		}
	}
}
