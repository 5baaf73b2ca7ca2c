package kwok

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Versions of the pinned control plane. kwok/tools/build.sh builds exactly these.
const (
	KubernetesVersion = "v1.36.4"
	KwokVersion       = "v0.8.0"
	EtcdVersion       = "v3.6.8"
)

// Component binaries that the cache folder must hold.
const (
	BinEtcd                  = "etcd"
	BinKubeAPIServer         = "kube-apiserver"
	BinKubeControllerManager = "kube-controller-manager"
	BinKubeScheduler         = "kube-scheduler"
	BinKubectl               = "kubectl"
	BinKwok                  = "kwok"
	BinKwokctl               = "kwokctl"
	// BinKwokResume is kwok v0.8.0 with kwok/tools/patches/kwok-watch-resume.patch
	// (its watches resume from their last resourceVersion, KwokWatchResume)
	// and kwok-outage-recovery.patch.
	BinKwokResume = "kwok-resume"
)

// AllBinaries lists every binary of the pinned control plane.
var AllBinaries = []string{BinEtcd, BinKubeAPIServer, BinKubeControllerManager, BinKubeScheduler, BinKubectl, BinKwok, BinKwokctl, BinKwokResume}

// ErrBinariesMissing means the control plane has not been built yet.
var ErrBinariesMissing = errors.New("control-plane binaries missing (run `make tools`)")

// Binaries is the folder that holds the built control plane.
type Binaries struct {
	Dir string
}

// Path returns the absolute path of one binary.
func (b Binaries) Path(name string) string {
	dir, err := filepath.Abs(b.Dir)
	if err != nil {
		dir = b.Dir
	}
	return filepath.Join(dir, name)
}

// Check reports every binary that is missing or not executable.
func (b Binaries) Check() error {
	var missing []string
	for _, name := range AllBinaries {
		info, err := os.Stat(b.Path(name))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("checking %s: %v: %w", b.Dir, missing, ErrBinariesMissing)
	}
	return nil
}

// CacheDir is where the control plane and clusters live: $DSBENCH_CACHE, or
// .cache at the root of the repository that holds the working directory.
func CacheDir() string {
	if dir := os.Getenv("DSBENCH_CACHE"); dir != "" {
		return dir
	}
	dir, err := os.Getwd()
	if err != nil {
		return ".cache"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "kwok", "tools", "build.sh")); err == nil {
			return filepath.Join(d, ".cache")
		}
		if filepath.Dir(d) == d {
			return ".cache"
		}
	}
}
