package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress is the live display: on a terminal one line that rewrites itself
// (step, nodes, pods, time left); elsewhere (CI) plain lines, at most one
// status line every 10 s so that logs stay readable.
type Progress struct {
	w           io.Writer
	interactive bool

	now func() time.Time

	mu         sync.Mutex
	step       string
	lastStatus time.Time
	lastLen    int
}

// Status lines are written at most this often: on a terminal the line is
// rewritten once a second, elsewhere a line every 10 s.
const (
	statusEveryInteractive = time.Second
	statusEvery            = 10 * time.Second
)

// NewProgress writes to w; interactive selects the rewriting line.
func NewProgress(w io.Writer, interactive bool) *Progress {
	return &Progress{w: w, interactive: interactive, now: time.Now}
}

// Step announces a new phase or step.
func (p *Progress) Step(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg == p.step {
		return
	}
	p.step = msg
	if p.interactive {
		p.rewrite(msg)
		return
	}
	fmt.Fprintf(p.w, "%s %s\n", p.now().Format("15:04:05"), msg)
}

// Status shows the current counts under the step. msg is called only when
// a line is due: the runner's line is the oracle's verdict of every
// DaemonSet, which at 5000 nodes cost the harness 12 CPU-s a run when it was
// computed at every tick of 250 ms for a line written every 10 s.
func (p *Progress) Status(msg func() string) {
	every := statusEvery
	if p.interactive {
		every = statusEveryInteractive
	}
	p.mu.Lock()
	now := p.now()
	due := p.lastStatus.IsZero() || now.Sub(p.lastStatus) >= every
	if due {
		p.lastStatus = now
	}
	p.mu.Unlock()
	if !due {
		return
	}
	line := msg() // outside the lock: Step need not wait for the oracle
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interactive {
		p.rewrite(p.step + " | " + line)
		return
	}
	fmt.Fprintf(p.w, "%s   %s\n", now.Format("15:04:05"), line)
}

// Done ends the rewriting line.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interactive && p.lastLen > 0 {
		fmt.Fprintln(p.w)
		p.lastLen = 0
	}
}

func (p *Progress) rewrite(line string) {
	const width = 160
	if len(line) > width {
		line = line[:width]
	}
	pad := ""
	if n := p.lastLen - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.lastLen = len(line)
}
