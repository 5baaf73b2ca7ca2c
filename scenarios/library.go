package scenarios

import (
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// library holds the built-in scenarios (library/*.yaml) and the manifests
// they use (library/manifests/).
//
//go:embed library
var library embed.FS

// Library lists the names of the built-in scenarios, sorted.
func Library() []string {
	entries, err := fs.ReadDir(library, "library")
	if err != nil {
		return nil // cannot happen: the directory is embedded
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	slices.Sort(names)
	return names
}

// LoadLibrary loads the built-in scenario with the given name.
func LoadLibrary(name string) (*Scenario, []Warning, error) {
	return LoadFS(library, path.Join("library", name+".yaml"))
}

// LibraryFS is the embedded library: <name>.yaml scenarios and manifests/.
func LibraryFS() fs.FS {
	sub, err := fs.Sub(library, "library")
	if err != nil {
		panic(err) // cannot happen: "library" is a valid path
	}
	return sub
}
