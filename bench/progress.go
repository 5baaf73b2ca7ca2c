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

	mu         sync.Mutex
	step       string
	lastStatus time.Time
	lastLen    int
}

// NewProgress writes to w; interactive selects the rewriting line.
func NewProgress(w io.Writer, interactive bool) *Progress {
	return &Progress{w: w, interactive: interactive}
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
	fmt.Fprintf(p.w, "%s %s\n", time.Now().Format("15:04:05"), msg)
}

// Status shows the current counts under the step.
func (p *Progress) Status(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interactive {
		p.rewrite(p.step + " | " + msg)
		return
	}
	if time.Since(p.lastStatus) < 10*time.Second {
		return
	}
	p.lastStatus = time.Now()
	fmt.Fprintf(p.w, "%s   %s\n", time.Now().Format("15:04:05"), msg)
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
