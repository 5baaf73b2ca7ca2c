package scenarios

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// libraryWarnings are the only warnings the library may produce: the seed
// manifests are run as published, legacy version and tabs included.
var libraryWarnings = []string{"converted to apps/v1", "tabs in indentation expanded"}

func TestLibraryLoadsAndValidates(t *testing.T) {
	names := Library()
	if len(names) < 10 {
		t.Fatalf("Library() has %d scenarios, want at least 10", len(names))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, warns, err := LoadLibrary(name)
			if err != nil {
				t.Fatalf("LoadLibrary(%s):\n%v", name, err)
			}
			for _, w := range warns {
				if !slices.ContainsFunc(libraryWarnings, func(ok string) bool { return strings.Contains(w.Message, ok) }) {
					t.Errorf("unexpected warning: %s", w)
				}
			}
			if s.Metadata.Name != name {
				t.Errorf("metadata.name = %q, want the file name %q", s.Metadata.Name, name)
			}
			if s.Metadata.Description == "" {
				t.Errorf("metadata.description is empty")
			}
			if _, err := Validate(s); err != nil {
				t.Errorf("Validate after Load:\n%v", err)
			}
			for _, nodes := range []int{100, 1000, 5000} {
				scaled, err := Scale(s, nodes)
				if err != nil {
					t.Fatalf("Scale(%d): %v", nodes, err)
				}
				if got := scaled.DefaultNodes(); got != nodes {
					t.Errorf("Scale(%d) has %d nodes", nodes, got)
				}
				if _, err := Validate(scaled); err != nil {
					t.Errorf("Validate after Scale(%d):\n%v", nodes, err)
				}
			}
		})
	}
}

// TestLibraryCoverage checks that the library covers what the issue asks
// for, by the features the scenarios use.
func TestLibraryCoverage(t *testing.T) {
	has := map[string]bool{}
	for _, name := range Library() {
		s, _, err := LoadLibrary(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range s.Workloads {
			if w.File != "" {
				has["file:"+path.Base(w.File)] = true
			}
		}
		if len(s.DaemonSets()) >= 3 {
			has["several DaemonSets"] = true
		}
		for _, ds := range s.DaemonSets() {
			switch {
			case ds.Spec.MinReadySeconds > 0:
				has["minReadySeconds"] = true
			case ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType:
				has["OnDelete"] = true
			}
			if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
				if ru.MaxSurge != nil && ru.MaxSurge.String() != "0" {
					has["maxSurge"] = true
				} else if ru.MaxUnavailable != nil {
					has["maxUnavailable"] = true
				}
			}
		}
		if len(s.Cluster.Pods.NeverReadyImages) > 0 {
			has["never ready"] = true
		}
		var kinds []StepKind
		s.Walk(func(st *Step) bool {
			kinds = append(kinds, st.Kind())
			if st.Parallel != nil {
				var inner []StepKind
				for _, b := range st.Parallel {
					for _, x := range b {
						inner = append(inner, x.Kind())
					}
				}
				if slices.Contains(inner, KindUpdate) && slices.Contains(inner, KindNodes) {
					has["node churn during a rollout"] = true
				}
			}
			for _, e := range st.Expect {
				has["expect "+string(e.Violation)] = true
			}
			if st.Delete != nil && st.Delete.Cascade == CascadeOrphan {
				has["delete orphan"] = true
			}
			return true
		})
		for _, k := range kinds {
			has[string(k)] = true
		}
		if slices.Contains(kinds, KindUpdate) && slices.Contains(kinds, KindRollback) {
			has["rollback"] = true
		}
	}
	manifests, err := fs.Glob(library, "library/manifests/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range manifests {
		want = append(want, "file:"+path.Base(m))
	}
	want = append(want, "several DaemonSets", "minReadySeconds", "OnDelete", "maxSurge", "maxUnavailable", "never ready",
		"node churn during a rollout", "expect NotConverged", "delete orphan", "rollback")
	for _, k := range stepKindNames {
		want = append(want, k)
	}
	for _, w := range want {
		if !has[w] {
			t.Errorf("no library scenario covers %q", w)
		}
	}
}

// TestSeedManifestsParse checks that every seed manifest parses, as it is,
// to valid apps/v1 DaemonSets.
func TestSeedManifestsParse(t *testing.T) {
	// Values for the coredns manifest's placeholders.
	values := map[string]string{"HOST_ALIASES": "", "NODESELECT": "kubernetes.io/os: linux", "IMAGE_COREDNS": "coredns:1.6.7"}
	files, err := fs.Glob(library, "library/manifests/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 13 {
		t.Fatalf("found %d seed manifests, want 13", len(files))
	}
	for _, file := range files {
		t.Run(path.Base(file), func(t *testing.T) {
			data, err := library.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			w, _, err := ParseManifest(file, data, values)
			if err != nil {
				t.Fatalf("ParseManifest:\n%v", err)
			}
			if len(w.DaemonSets) != 1 {
				t.Fatalf("got %d DaemonSets, want 1", len(w.DaemonSets))
			}
			ds := w.DaemonSets[0]
			if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" {
				t.Errorf("type = %s %s, want apps/v1 DaemonSet", ds.APIVersion, ds.Kind)
			}
			if ds.Spec.Selector == nil || len(ds.Spec.Template.Spec.Containers) == 0 {
				t.Errorf("DaemonSet %s has no selector or no containers", Ref(ds))
			}
		})
	}
}

// TestSeedManifestsVerbatim checks that each manifest is a verbatim block of
// a seed document, when the seeds are at hand.
func TestSeedManifestsVerbatim(t *testing.T) {
	seeds, _ := filepath.Glob("/work/shared/seeds/*.txt")
	if len(seeds) == 0 {
		t.Skip("seed documents not present")
	}
	var texts [][]byte
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, data)
	}
	files, _ := fs.Glob(library, "library/manifests/*.yaml")
	for _, file := range files {
		data, _ := library.ReadFile(file)
		if !slices.ContainsFunc(texts, func(seed []byte) bool { return bytes.Contains(seed, data) }) {
			t.Errorf("%s is not a verbatim block of any seed document", file)
		}
	}
}
