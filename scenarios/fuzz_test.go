package scenarios

import (
	"io/fs"
	"testing"
	"testing/fstest"
)

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic, and
// whatever it accepts must validate, scale and copy.
func FuzzLoad(f *testing.F) {
	files, err := fs.Glob(library, "library/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, _ := library.ReadFile(file)
		f.Add(data)
	}
	for _, seed := range []string{
		"", "null", "[]", "{", "apiVersion: dsbench.dev/v1alpha1\nkind: Scenario\n",
		"a: &a [*a]", "steps:\n- &s {parallel: [[*s]]}\n", "<<: {a: 1}\n<<: [*x]\n",
		"cluster: {pools: [{name: a, count: 99999999999999999999}]}",
		"workloads: [{file: ../../etc/passwd}, {file: manifests/seed004-ssd-monitor.yaml}]",
		"workloads: [{inline: {apiVersion: extensions/v1beta1, kind: DaemonSet, spec: {templateGeneration: 1}}}]",
		"steps: [{pause: 1s, update: {patch: {spec: {$patch: replace}}}}]",
	} {
		f.Add([]byte(seed))
	}
	// The manifests are reachable, so fuzzing explores their loading too.
	fsys := fstest.MapFS{}
	manifests, _ := fs.Glob(library, "library/manifests/*.yaml")
	for _, m := range manifests {
		data, _ := library.ReadFile(m)
		fsys[m] = &fstest.MapFile{Data: data}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := fstest.MapFS{"library/fuzz.yaml": &fstest.MapFile{Data: data}}
		for k, v := range fsys {
			mem[k] = v
		}
		s, _, err := LoadFS(mem, "library/fuzz.yaml")
		if err != nil {
			if _, ok := err.(*ValidationError); !ok {
				t.Fatalf("error %T, want *ValidationError: %v", err, err)
			}
			return
		}
		if _, err := Validate(s); err != nil {
			t.Fatalf("Load accepted what Validate rejects: %v", err)
		}
		if scaled, err := Scale(s, 1000); err == nil {
			Validate(scaled)
		}
		s.DeepCopy()
	})
}
