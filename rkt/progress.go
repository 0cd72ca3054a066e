package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/store"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// terminalWidth returns f's width in columns (80 if unknown).
func terminalWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 80
	}
	return int(ws.Col)
}

// layerProgress is what is known of one blob's download.
type layerProgress struct {
	store.Progress
	started time.Time
	ended   time.Time
}

// progressBars draws one bar per blob (bytes, rate) on a terminal,
// redrawing in place at most every 100 ms.
type progressBars struct {
	mu     sync.Mutex
	w      io.Writer
	width  int
	title  string
	status string // what happens after the downloads, e.g. "unpacking"
	order  []string
	blobs  map[string]*layerProgress
	lines  int // lines drawn last time
	drawn  time.Time
	closed bool
}

func newProgressBars(f *os.File, title string) *progressBars {
	return &progressBars{w: f, width: terminalWidth(f), title: title, blobs: map[string]*layerProgress{}}
}

// Update records a progress report; it is safe for concurrent use.
func (p *progressBars) Update(pr store.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	now := time.Now()
	lp, ok := p.blobs[pr.Digest]
	if !ok {
		lp = &layerProgress{started: now}
		p.blobs[pr.Digest] = lp
		p.order = append(p.order, pr.Digest)
	}
	lp.Progress = pr
	if pr.Done && lp.ended.IsZero() {
		lp.ended = now
	}
	if pr.Done || now.Sub(p.drawn) >= 100*time.Millisecond {
		p.draw(now)
	}
}

// SetStatus shows what is being done besides downloading (on the title line).
func (p *progressBars) SetStatus(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.status = s
	p.draw(time.Now())
}

// Finish draws the final state and stops drawing.
func (p *progressBars) Finish(ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	switch {
	case !ok:
		p.status = "failed"
	case p.status != "":
		p.status = "done"
	}
	p.draw(time.Now())
	p.closed = true
}

func (p *progressBars) draw(now time.Time) {
	var b strings.Builder
	if p.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.lines) // back to the first line drawn
	}
	title := "Fetching " + p.title
	if p.status != "" {
		title += ": " + p.status
	}
	fmt.Fprintf(&b, "\x1b[2K%s\n", truncate(title, p.width-1))
	for _, d := range p.order {
		fmt.Fprintf(&b, "\x1b[2K%s\n", p.line(d, p.blobs[d], now))
	}
	p.lines = len(p.order) + 1
	p.drawn = now
	io.WriteString(p.w, b.String())
}

// line renders "<digest> [=====>    ]  1.2 MiB / 3.4 MiB  5.6 MiB/s".
func (p *progressBars) line(digest string, lp *layerProgress, now time.Time) string {
	short := strings.TrimPrefix(digest, "sha256:")
	if len(short) > 12 {
		short = short[:12]
	}
	end := now
	if !lp.ended.IsZero() {
		end = lp.ended
	}
	elapsed := end.Sub(lp.started).Seconds()
	rate := ""
	if elapsed > 0.05 && lp.Current > 0 {
		rate = humanBytes(int64(float64(lp.Current)/elapsed)) + "/s"
	}
	counts := humanBytes(lp.Current) + " / " + humanBytes(lp.Total)
	if lp.Done {
		counts, rate = humanBytes(lp.Total), "done"
	}
	barWidth := p.width - len(short) - len(counts) - len(rate) - 8
	if barWidth > 40 {
		barWidth = 40
	}
	bar := ""
	if barWidth >= 5 {
		bar = "[" + progressBar(lp.Current, lp.Total, lp.Done, barWidth) + "] "
	}
	return truncate(fmt.Sprintf("%s %s%s  %s", short, bar, counts, rate), p.width-1)
}

// progressBar renders a bar of width cells for current out of total.
func progressBar(current, total int64, done bool, width int) string {
	filled := width
	if !done {
		filled = 0
		if total > 0 {
			filled = int(float64(width) * float64(min(current, total)) / float64(total))
		}
	}
	if filled >= width {
		return strings.Repeat("=", width)
	}
	return strings.Repeat("=", filled) + ">" + strings.Repeat(" ", width-filled-1)
}

func truncate(s string, n int) string {
	if n > 0 && len(s) > n {
		return s[:n]
	}
	return s
}

// humanBytes formats a byte count with binary units (1.5 MiB).
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
