package store

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

// trash is a locked temporary directory that blobs and trees are renamed
// into before they are deleted: a crash never leaves a half-removed tree
// under its name, and cleanTemp collects what a killed process left.
type trash struct {
	s    *Store
	dir  string
	lock *os.File
	n    int
}

func (s *Store) newTrash() (*trash, error) {
	dir, lock, err := s.newTempDir("rm")
	if err != nil {
		return nil, err
	}
	return &trash{s: s, dir: dir, lock: lock}, nil
}

// put moves the file or directory at p into the trash; one already gone
// is no error.
func (t *trash) put(p string) error {
	t.n++
	if err := os.Rename(p, t.dir+"/"+strconv.Itoa(t.n)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("cannot remove %q: %w", p, err)
	}
	return nil
}

// empty deletes what the trash holds, and the trash: at once, or in the
// background for a Store that RemovesInBackground.
func (t *trash) empty() error {
	del := func() error {
		defer t.lock.Close()
		return removeTree(t.dir)
	}
	if !t.s.bg.queue(func() { del() }) {
		return del()
	}
	return nil
}

// background runs the deletions of a Store that RemovesInBackground, one
// at a time on one goroutine (started when there is work), so that a
// burst of removals takes neither a thread each nor the disk at once.
type background struct {
	mu      sync.Mutex
	on      bool
	pending []func()
	running bool
	wg      sync.WaitGroup
}

// RemovesInBackground makes RemoveImage return once the image's blobs
// and trees are out of the store's names, their files deleted afterwards
// (as containerd's overlay snapshotter removes snapshots asynchronously):
// for a long-lived process, the kubelet-service, whose image GC removes
// images of tens of thousands of files. A process that exits before the
// deletions end leaves them to the next cleanup of temporary files.
func (s *Store) RemovesInBackground() {
	s.bg.mu.Lock()
	s.bg.on = true
	s.bg.mu.Unlock()
}

// WaitRemovals waits for the background deletions queued so far.
func (s *Store) WaitRemovals() { s.bg.wg.Wait() }

// queue runs f in the background and reports true, or reports false when
// the Store deletes at once.
func (b *background) queue(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.on {
		return false
	}
	b.wg.Add(1)
	b.pending = append(b.pending, f)
	if !b.running {
		b.running = true
		go b.run()
	}
	return true
}

func (b *background) run() {
	for {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		f := b.pending[0]
		b.pending = b.pending[1:]
		b.mu.Unlock()
		f()
		b.wg.Done()
	}
}
