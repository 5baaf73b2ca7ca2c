package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dsbench/dsbench/bench/oracle"
)

// maxJournalLine bounds one line: a DaemonSet with a large template is
// tens of KB, nothing the recorder writes comes near this.
const maxJournalLine = 16 << 20

// ReplayFile replays the journal at path (see Replay); errors name the file.
func ReplayFile(path string) (JournalHeader, []oracle.Violation, error) {
	f, err := os.Open(path)
	if err != nil {
		return JournalHeader{}, nil, fmt.Errorf("replaying journal: %w", err)
	}
	defer f.Close()
	h, vs, err := Replay(f)
	if err != nil {
		return h, nil, fmt.Errorf("replaying %s: %w", path, err)
	}
	return h, vs, nil
}

// Replay feeds a fresh Checker, configured as the header says, every input
// of a gzip-compressed journal in order and returns the header and what the
// Checker reported at the journal's finish. It is pure: no clock, no I/O
// but r. Bad input is an error naming the line, never a panic.
func Replay(r io.Reader) (JournalHeader, []oracle.Violation, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return JournalHeader{}, nil, fmt.Errorf("line 1: not a gzip-compressed journal: %w", err)
	}
	defer zr.Close()
	in := &readErr{r: zr}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxJournalLine)
	n := 0
	var h JournalHeader
	var c *oracle.Checker
	var found []oracle.Violation
	finished := false
	for sc.Scan() {
		n++
		data := sc.Bytes()
		// A truncated stream ends in a partial line, which does not
		// decode: then the reading error says why.
		truncated := func(err error) error {
			if in.err != nil && !errors.Is(in.err, io.EOF) {
				return fmt.Errorf("line %d: reading: %w", n, in.err)
			}
			return fmt.Errorf("line %d: %w", n, err)
		}
		if n == 1 {
			if h, err = decodeHeader(data); err != nil {
				return h, nil, truncated(err)
			}
			c = oracle.NewChecker(h.Oracle)
			continue
		}
		if finished {
			return h, nil, fmt.Errorf("line %d: input after finish", n)
		}
		var l journalLine
		if err := json.Unmarshal(data, &l); err != nil {
			return h, nil, truncated(fmt.Errorf("decoding: %w", err))
		}
		vs, err := replayLine(c, h.Start, l)
		if err != nil {
			return h, nil, fmt.Errorf("line %d: %w", n, err)
		}
		if l.Op == opFinish {
			found, finished = vs, true
		}
	}
	if err := sc.Err(); err != nil {
		return h, nil, fmt.Errorf("line %d: reading: %w", n+1, err)
	}
	switch {
	case n == 0:
		return h, nil, errors.New("line 1: empty journal, want a header")
	case !finished:
		return h, nil, fmt.Errorf("line %d: the journal ends without a finish (truncated?)", n+1)
	}
	return h, found, nil
}

// readErr remembers its reader's error, which a Scanner hands over only
// after the partial line before it.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

func decodeHeader(data []byte) (JournalHeader, error) {
	var h JournalHeader
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("decoding the header: %w", err)
	}
	switch {
	case h.Format != JournalFormat:
		return h, fmt.Errorf("header: format %q, want %q", h.Format, JournalFormat)
	case h.Version > JournalVersion:
		return h, fmt.Errorf("header: version %d is newer than this reader's %d", h.Version, JournalVersion)
	case h.Version < 1:
		return h, fmt.Errorf("header: version %d, want 1 to %d", h.Version, JournalVersion)
	}
	return h, nil
}

// replayLine feeds one input; a finish returns the violations.
func replayLine(c *oracle.Checker, start time.Time, l journalLine) ([]oracle.Violation, error) {
	at := func() (time.Time, error) {
		if l.T == nil {
			return time.Time{}, fmt.Errorf("%s without a time", l.Op)
		}
		return start.Add(time.Duration(*l.T)), nil
	}
	switch l.Op {
	case opApply:
		t, err := at()
		if err != nil {
			return nil, err
		}
		ev, err := decodeEvent(l, t)
		if err != nil {
			return nil, err
		}
		if err := c.Apply(ev); err != nil {
			return nil, err
		}
	case opAdvance:
		t, err := at()
		if err != nil {
			return nil, err
		}
		c.Advance(t)
	case opRequestDeletion:
		if l.PodKey == "" {
			return nil, errors.New("request-deletion without a podKey")
		}
		c.RequestDeletion(l.PodKey)
	case opControllerStopped:
		c.ControllerStopped()
	case opControllerStarted:
		t, err := at()
		if err != nil {
			return nil, err
		}
		c.ControllerStarted(t)
	case opFinish:
		t, err := at()
		if err != nil {
			return nil, err
		}
		return c.Finish(t), nil
	default:
		return nil, fmt.Errorf("unknown op %q", l.Op)
	}
	return nil, nil
}

// decodeEvent checks an apply line: a known kind and exactly one object,
// and for a DaemonSet, the revision hash the live oracle computed.
func decodeEvent(l journalLine, t time.Time) (oracle.Event, error) {
	switch l.Kind {
	case oracle.Added, oracle.Modified, oracle.Deleted:
	default:
		return oracle.Event{}, fmt.Errorf("apply: unknown event kind %q", l.Kind)
	}
	ev := oracle.Event{Time: t, Kind: l.Kind, Relisted: l.Relisted}
	objects := 0
	if l.Node != nil {
		ev.Object, objects = l.Node, objects+1
	}
	if l.Pod != nil {
		ev.Object, objects = l.Pod, objects+1
	}
	if l.DaemonSet != nil {
		ev.Object, objects = l.DaemonSet, objects+1
		if got := oracle.CurrentHash(l.DaemonSet); l.Hash != "" && got != l.Hash {
			return ev, fmt.Errorf("apply: DaemonSet %s/%s hashes to %s, the live oracle's hash was %s: the journal lost part of its template",
				l.DaemonSet.Namespace, l.DaemonSet.Name, got, l.Hash)
		}
	}
	if objects != 1 {
		return ev, fmt.Errorf("apply: %d objects, want one node, pod or daemonSet", objects)
	}
	return ev, nil
}
