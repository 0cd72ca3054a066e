package testutil

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"
)

var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// podTracker remembers every pod UUID that appeared under <data>/pods, so
// the leak check can look for cgroups of pods already removed.
type podTracker struct {
	dataDir string
	mu      sync.Mutex
	seen    map[string]bool
	stop    chan struct{}
	done    chan struct{}
}

func startPodTracker(dataDir string) *podTracker {
	p := &podTracker{dataDir: dataDir, seen: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			p.scan()
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *podTracker) scan() {
	states, _ := filepath.Glob(filepath.Join(p.dataDir, "pods", "*"))
	for _, s := range states {
		entries, err := os.ReadDir(s)
		if err != nil {
			continue
		}
		p.mu.Lock()
		for _, e := range entries {
			if uuidRe.MatchString(e.Name()) {
				p.seen[e.Name()] = true
			}
		}
		p.mu.Unlock()
	}
}

// Track records a pod UUID explicitly (e.g. from --uuid-file-save).
func (p *podTracker) Track(uuid string) {
	p.mu.Lock()
	p.seen[uuid] = true
	p.mu.Unlock()
}

// UUIDs returns every UUID seen so far, sorted, after a fresh scan.
func (p *podTracker) UUIDs() []string {
	p.scan()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.seen))
	for u := range p.seen {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

func (p *podTracker) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
		<-p.done
	}
}

// TrackPod records a pod UUID for the leak check, for pods that may live
// too briefly for the background scan to see them.
func (e *Env) TrackPod(uuid string) { e.tracker.Track(uuid) }

// PodUUIDs returns every pod UUID seen in this environment so far.
func (e *Env) PodUUIDs() []string { return e.tracker.UUIDs() }
