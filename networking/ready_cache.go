package networking

import (
	"strings"
	"sync"
	"syscall"
)

// NetworkReady is asked on every CRI Status call (by the kubelet, every few
// seconds): its answer costs a directory listing, JSON parsing and plugin
// lookups, half of such a call. The answer is kept while the files it
// was computed from are unchanged: the config directory (a config added,
// removed or renamed), each config file in it, the saved default subnet,
// the plugin directories and the plugins found, checked with a few stats.

type fileStamp struct {
	ino, size, mtime, ctime int64
	exists                  bool
}

type readyAnswer struct {
	paths  []string
	stamps []fileStamp
	ok     bool
	why    string
}

var readyCache = struct {
	sync.Mutex
	answers map[string]*readyAnswer
}{answers: map[string]*readyAnswer{}}

func stamp(path string) fileStamp {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileStamp{}
	}
	return fileStamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), exists: true}
}

func stamps(paths []string) []fileStamp {
	out := make([]fileStamp, len(paths))
	for i, p := range paths {
		out[i] = stamp(p)
	}
	return out
}

// cachedReady returns NetworkReady's answer for cfg, from the cache when
// none of its inputs changed.
func cachedReady(cfg Config) (bool, string) {
	key := cfg.confDir() + "\x00" + strings.Join(cfg.pluginDirs(), ":") + "\x00" + cfg.subnetFile() + "\x00" + cfg.DefaultSubnet
	readyCache.Lock()
	a := readyCache.answers[key]
	readyCache.Unlock()
	if a != nil {
		same := true
		for i, s := range stamps(a.paths) {
			if s != a.stamps[i] {
				same = false
				break
			}
		}
		if same {
			return a.ok, a.why
		}
	}
	// stamped before computing: a change meanwhile is seen next time
	paths := []string{cfg.confDir(), cfg.subnetFile()}
	if files, err := confFiles(cfg.confDir()); err == nil {
		paths = append(paths, files...)
	}
	paths = append(paths, cfg.pluginDirs()...)
	before := stamps(paths)
	ok, why, plugins := networkReady(cfg)
	a = &readyAnswer{paths: append(paths, plugins...), ok: ok, why: why}
	a.stamps = append(before, stamps(plugins)...)
	readyCache.Lock()
	readyCache.answers[key] = a
	readyCache.Unlock()
	return a.ok, a.why
}
