package main

import (
	"errors"
	"io"
	"os"
	"sync"
)

// broadcaster copies an app's output stream to its log and to the clients
// attached to it. A slow or broken attach client is dropped, never allowed
// to block the app.
type broadcaster struct {
	mu   sync.Mutex
	subs map[int]io.Writer
	next int
}

func newBroadcaster() *broadcaster { return &broadcaster{subs: map[int]io.Writer{}} }

// subscribe adds w and returns a function that removes it.
func (b *broadcaster) subscribe(w io.Writer) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.subs[id] = w
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
	}
}

func (b *broadcaster) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, w := range b.subs {
		if _, err := w.Write(p); err != nil {
			delete(b.subs, id)
		}
	}
	return len(p), nil
}

// pump copies r to the log splitter and the broadcaster until r ends, then
// flushes the splitter. A read deadline (pausePumps) ends it without the
// flush.
func pump(r io.Reader, ls *lineSplitter, b *broadcaster) {
	buf := make([]byte, 16<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			ls.Write(buf[:n])
			b.Write(buf[:n])
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
		if err != nil {
			ls.Flush()
			return
		}
	}
}
