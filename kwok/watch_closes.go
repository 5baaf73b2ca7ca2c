package kwok

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// APIServerVerbosity is kube-apiserver's -v: at 1 it names each watch it
// closes because its reader fell behind, with the watch's selectors.
const APIServerVerbosity = "1"

// kwokPodWatchClose marks the log line of kube-apiserver closing kwok's pod
// watch: kwok's is the only pod watch with this field selector (the
// scheduler's selects on status.phase, the controllers' and the harness's
// select nothing).
var (
	podWatchClose     = []byte("Forcing pods watcher close due to unresponsiveness")
	kwokPodWatchField = []byte(`fields: "spec.nodeName!="`)
)

// KwokPodWatchCloses counts the times kube-apiserver has closed kwok's pod
// watch as unresponsive since it started logging. kwok v0.8.0 watches again
// from resourceVersion 0 and so works through every pod again each time
// before it sees what changed: times measured across such a replay are
// partly the simulator's. A log not written yet counts none.
func (c *Cluster) KwokPodWatchCloses() (int, error) {
	n, err := countKwokPodWatchCloses(filepath.Join(c.LogDir(), "kube-apiserver.log"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return n, err
}

func countKwokPodWatchCloses(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	r := bufio.NewReaderSize(f, 64<<10)
	long := false // within a line longer than the buffer: not one of ours
	for {
		l, isPrefix, err := r.ReadLine()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if !long && !isPrefix && bytes.Contains(l, podWatchClose) && bytes.Contains(l, kwokPodWatchField) {
			n++
		}
		long = isPrefix
	}
}
