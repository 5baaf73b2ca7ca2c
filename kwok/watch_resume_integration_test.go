package kwok_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

// kwok v0.8.0 starts every watch from resourceVersion "0", so each new watch
// (the first after its list, and each one after kube-apiserver closed the
// last) is sent every pod again as ADDED, and kwok works through all of them
// before what changed. The patched kwok (--kwok-watch=resume) passes on the
// resourceVersion its reflector asks for. kube-apiserver counts what it
// sends a watch before the live events (apiserver_init_events_total); a
// kwok controller started again on a cluster with pods shows the
// difference, since nothing else watches anew meanwhile.
func TestKwokWatchFromResourceVersion(t *testing.T) {
	kwoktest.Cluster(t)
	const pods = 60
	for _, watch := range []kwok.KwokWatch{kwok.KwokWatchRelist, kwok.KwokWatchResume} {
		// A cluster of its own: the restart leaves the nodes it had to the
		// old kwok's Leases for 200 s.
		c, client := ownCluster(t, "kwok-"+string(watch), watch)
		replays := watch == kwok.KwokWatchRelist
		pool := kwok.NodePool{Prefix: "resume" + string(watch), Count: 2}
		label := "resume-test-" + string(watch)
		removeAtEnd(t, client, pool, label)
		createSchedulable(t, client, pool)
		var names []string
		for i := range pods {
			name := fmt.Sprintf("resume-%s-%d", watch, i)
			names = append(names, name)
			createPodOn(t, client, name, pool.NodeNames()[i%2], label)
		}
		allRunning(t, client, names)

		before := initEvents(t, client, "pods")
		restartKwok(t, c)
		var sent int
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			sent = initEvents(t, client, "pods") - before
			if sent >= pods || time.Now().After(deadline) {
				break
			}
		}
		t.Logf("kwok %s: kube-apiserver sent %d pods to its new pod watch before the live events (%d pods running)", watch.Version(), sent, pods)
		if replays && sent < pods {
			t.Errorf("kwok %s: its new pod watch was sent %d pods, want at least the %d running: v0.8.0 no longer watches from resourceVersion 0", watch.Version(), sent, pods)
		}
		if !replays && sent >= pods {
			t.Errorf("kwok %s: its new pod watch was sent %d pods, as many as run (%d): it watched from resourceVersion 0, not from its list", watch.Version(), sent, pods)
		}
		// The new watch is live: on a node the new kwok took up (and so
		// already listed the pods of), a pod created later reaches kwok
		// through the watch alone, and starts.
		after := kwok.NodePool{Prefix: "after" + string(watch), Count: 1}
		removeAtEnd(t, client, after, label)
		createSchedulable(t, client, after)
		late := fmt.Sprintf("resume-%s-late", watch)
		createPodOn(t, client, late, after.NodeNames()[0], label)
		allRunning(t, client, []string{late})
	}
}

// ownCluster brings up a cluster of the package's kind, but running the
// kwok of watch, and brings it down when the test ends.
func ownCluster(t *testing.T, name string, watch kwok.KwokWatch) (*kwok.Cluster, kubernetes.Interface) {
	t.Helper()
	conf := kwoktest.Config(name)
	conf.KwokWatch = watch
	c, err := kwok.Up(t.Context(), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background()) })
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, client
}

// allRunning waits until every named pod of the default namespace runs and
// is Ready.
func allRunning(t *testing.T, client kubernetes.Interface, names []string) {
	t.Helper()
	waitFor(t, time.Minute, fmt.Sprintf("%d pods running", len(names)), func() (bool, error) {
		for _, name := range names {
			if podState(t.Context(), client, name) != "Running/True" {
				return false, nil
			}
		}
		return true, nil
	})
}

// restartKwok kills the cluster's kwok controller and has kwokctl start it
// again, with the same binary and flags.
func restartKwok(t *testing.T, c *kwok.Cluster) {
	t.Helper()
	pid := componentPID(t, c, "kwok-controller")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the kwok controller gone", func() (bool, error) {
		return syscall.Kill(pid, 0) != nil || isZombie(pid), nil
	})
	revived, err := c.ReviveDead(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(revived) != 1 || revived[0] != "kwok-controller" {
		t.Fatalf("started again %v, want [kwok-controller]", revived)
	}
}

// isZombie says whether pid has exited and awaits its parent's wait.
func isZombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && strings.Contains(string(stat), ") Z")
}

// initEvents reads kube-apiserver's apiserver_init_events_total for a
// resource of the core group: what its watch cache has sent new watches
// before their live events.
func initEvents(t *testing.T, client kubernetes.Interface, resource string) int {
	t.Helper()
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := `apiserver_init_events_total{group="",resource="` + resource + `"} `
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return int(f)
		}
	}
	return 0 // no watch has been sent any yet
}
