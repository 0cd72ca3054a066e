package networking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"

	"github.com/rkt/rkt/pkg/schema"
)

// brokenEntry is a libcni cache entry that does not parse. libcni writes
// its entries in place (os.WriteFile: no temporary file, no sync), so a
// kill or a power cut during an ADD leaves one empty or cut short;
// GetCachedAttachments skips it without a word, and what the ADD set up
// would then never be released. Its name still says whose it is.
type brokenEntry struct {
	path, network, containerID, ifName string
}

// parseCacheEntryName splits libcni's "<network>-<container id>-<ifname>";
// rkt's container IDs are pod UUIDs, network names may contain dashes,
// interface names here do not.
func parseCacheEntryName(name string) (network, id, ifName string, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || i == len(name)-1 {
		return "", "", "", false
	}
	rest, ifName := name[:i], name[i+1:]
	const sep = 1 + 36 // "-<uuid>"
	if len(rest) <= sep || rest[len(rest)-sep] != '-' || !schema.IsUUID(rest[len(rest)-36:]) {
		return "", "", "", false
	}
	return rest[:len(rest)-sep], rest[len(rest)-36:], ifName, true
}

// brokenCacheEntries lists the entries of libcni's cache that
// GetCachedAttachments leaves out (unreadable, or not a libcni v1 entry), of
// the pod uuid or, with "", of any pod.
// Names that are not libcni's are ignored.
func brokenCacheEntries(cfg Config, uuid string) ([]brokenEntry, error) {
	dir := filepath.Join(cfg.cacheDir(), "results")
	names, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list libcni's cache %q: %w", dir, err)
	}
	var broken []brokenEntry
	for _, n := range names {
		network, id, ifName, ok := parseCacheEntryName(n.Name())
		if !ok || n.IsDir() || (uuid != "" && id != uuid) {
			continue
		}
		p := filepath.Join(dir, n.Name())
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // a DEL removed it meanwhile
		}
		var e struct {
			Kind        string `json:"kind"`
			IfName      string `json:"ifName"`
			NetworkName string `json:"networkName"`
		}
		if err == nil && json.Unmarshal(data, &e) == nil && e.Kind == libcni.CNICacheV1 &&
			e.IfName != "" && e.NetworkName != "" {
			continue // GetCachedAttachments returns it
		}
		broken = append(broken, brokenEntry{path: p, network: network, containerID: id, ifName: ifName})
	}
	return broken, nil
}

// remove drops the entry, once what it stood for was released.
func (b brokenEntry) remove() error {
	if err := os.Remove(b.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot remove unreadable cache entry of network %q of pod %q: %w", b.network, b.containerID, err)
	}
	return nil
}

// del runs CNI DEL for the entry with its network's config as it is now
// (its own is lost with the entry), so plugins that keep state elsewhere
// (a dhcp lease, a third-party IPAM) release it too, in the namespace at
// netns ("" when it is gone). libcni reads no cached result for it (an
// empty cache directory), so the entry stays until the caller, having
// swept and released, removes it. A network no longer configured has
// nothing to run: nil.
func (b brokenEntry) del(ctx context.Context, cfg Config, netns string) error {
	data, _, err := networkConfList(cfg, b.network, true)
	if errors.Is(err, ErrNetworkNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot remove pod %q from network %q: %w", b.containerID, b.network, err)
	}
	list, err := libcni.ConfListFromBytes(data)
	if err != nil {
		return fmt.Errorf("cannot remove pod %q from network %q: %w", b.containerID, b.network, err)
	}
	list, _ = installedPlugins(cfg, list)
	if !isNetNS(netns) { // the empty mountpoint a reboot leaves
		netns = ""
	}
	noCache := filepath.Join(cfg.stateDir(), "no-cache") // never created
	cni, _ := newDelCNIAt(cfg, noCache)
	rt := &libcni.RuntimeConf{ContainerID: b.containerID, NetNS: netns, IfName: b.ifName}
	if err := cni.DelNetworkList(ctx, list, rt); err != nil {
		return fmt.Errorf("cannot remove pod %q from network %q: %w", b.containerID, b.network, err)
	}
	return nil
}
