package scenarios

import "testing"

func BenchmarkLoadLibrary(b *testing.B) {
	for b.Loop() {
		if _, _, err := LoadLibrary("seed-manifests"); err != nil {
			b.Fatal(err)
		}
	}
}
