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

// podWatchClose and kwokPodWatchField mark the log line of kube-apiserver
// closing kwok's pod watch: kwok's is the only pod watch with this field
// selector (the scheduler's selects on status.phase, the controllers' and
// the harness's select nothing).
var (
	podWatchClose     = []byte("Forcing pods watcher close due to unresponsiveness")
	kwokPodWatchField = []byte(`fields: "spec.nodeName!="`)
)

// KwokPodWatchCloses counts the times kube-apiserver has closed kwok's pod
// watch as unresponsive in the cluster's life, in its log and in the logs
// of the kube-apiservers that RestartAPIServer or ReviveDead replaced (kept
// as kube-apiserver.<pid>.log), so that the count never goes back. kwok
// v0.8.0 watches again from resourceVersion 0 and so works through every
// pod again each time before it sees what changed: times measured across
// such a replay are partly the simulator's.
func (c *Cluster) KwokPodWatchCloses() (int, error) {
	retired, err := filepath.Glob(filepath.Join(c.LogDir(), ComponentKubeAPIServer+".[0-9]*.log"))
	if err != nil {
		return 0, err
	}
	total := 0
	for _, path := range append(retired, c.logFile(ComponentKubeAPIServer)) {
		n, err := countKwokPodWatchCloses(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		total += n
	}
	return total, nil
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
