package networking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
)

// Load reads the network state Setup saved in podDir. It returns an error
// matching os.ErrNotExist when the pod has none. NetNS is given relative to
// podDir as it is now: pods move between state directories by rename.
func Load(podDir string) (*Result, error) {
	path := schema.PodDir(podDir).NetInfo()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read network info of pod %q: %w", podDir, err)
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("cannot parse network info %q: %w: %w", path, errCorruptInfo, err)
	}
	if res.NetNS != "" {
		res.NetNS = schema.PodDir(podDir).NetNS()
	}
	return &res, nil
}

// errCorruptInfo is a net-info.json that does not parse: empty or cut
// short by a power cut after its last, unsynced save on a filesystem that
// does not order a rename after the data (ext4 does).
var errCorruptInfo = errors.New("corrupt network info")

func save(podDir string, res *Result) error {
	return writeInfo(podDir, res, fileperm.WriteFile)
}

// saveVolatile is save without sync (readers see the old or the new info).
func saveVolatile(podDir string, res *Result) error {
	return writeInfo(podDir, res, fileperm.WriteFileVolatile)
}

func writeInfo(podDir string, res *Result, write func(string, []byte, fileperm.Class) error) error {
	data, err := json.MarshalIndent(res, "", "\t")
	if err != nil {
		return fmt.Errorf("cannot encode network info of pod %q: %w", podDir, err)
	}
	return write(schema.PodDir(podDir).NetInfo(), data, fileperm.Shared)
}

// Teardown undoes Setup from what it saved: CNI DEL of every network (in
// reverse order, whether its ADD finished or not), then unmount and removal
// of the network namespace and of net-info.json. It is idempotent and works
// on a pod whose Setup was interrupted or whose network configs changed or
// vanished since. When a DEL fails, the namespace and net-info.json are kept
// so that a later Teardown can retry. After an interrupted Setup or
// Teardown it first kills the plugins the dead stage0 left running.
func Teardown(ctx context.Context, cfg Config, podDir string) error {
	netnsPath := schema.PodDir(podDir).NetNS()
	res, err := Load(podDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, errCorruptInfo) {
		return err
	}
	// a corrupt net-info.json is as good as none: libcni's cache stands in
	if res == nil || !res.Complete || res.TeardownStarted {
		// an ADD or DEL may have been cut off with its stage0
		uuid := filepath.Base(podDir)
		if res != nil && res.UUID != "" {
			uuid = res.UUID
		}
		if err := killOrphanedPlugins(ctx, uuid); err != nil {
			return err
		}
	}
	if res != nil && len(res.Networks) > 0 {
		if err := delNetworks(ctx, cfg, podDir, res); err != nil {
			return err
		}
	}
	if res == nil {
		// No net-info.json (lost, corrupt, or never written): fall back to
		// libcni's cache, keyed by the pod UUID (the pod dir's name).
		uuid := filepath.Base(podDir)
		if err := delCachedAttachments(ctx, cfg, uuid, netnsPath); err != nil {
			return err
		}
		if err := gcMasquerade(ctx, cfg, func(u string) bool { return u != uuid }); err != nil {
			return err
		}
	}
	if res != nil && res.Masquerade != "" {
		if err := releaseMasquerade(ctx, cfg, res.Masquerade, res.UUID); err != nil {
			return err
		}
	}
	if err := removeNetNS(netnsPath); err != nil {
		return err
	}
	if err := os.Remove(schema.PodDir(podDir).NetInfo()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot remove network info of pod %q: %w", podDir, err)
	}
	return nil
}

// delNetworks runs CNI DEL for every network of res, last first.
func delNetworks(ctx context.Context, cfg Config, podDir string, res *Result) error {
	uuid := res.UUID
	if uuid == "" {
		uuid = filepath.Base(podDir)
	}
	netns := res.NetNS
	if netns == "" || !isNetNS(netns) {
		// Plugins cannot enter a namespace that is gone; with an empty
		// path they still release their IPAM reservations.
		netns = ""
	}
	// Plugins clean up their iptables rules only while they can see the
	// pod's interface; when it is gone or a DEL was interrupted, sweep.
	sweep := netns == "" || res.TeardownStarted
	res.TeardownStarted = true
	if err := save(podDir, res); err != nil {
		return err
	}
	cni, ex := newDelCNI(cfg)
	var errs []error
	skipped := false
	for i := len(res.Networks) - 1; i >= 0; i-- {
		n := &res.Networks[i]
		list, err := libcni.ConfListFromBytes(n.ConfList)
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid saved config of network %q: %w", n.Name, err))
			continue
		}
		list, dropped := installedPlugins(cfg, list)
		if dropped {
			// what the missing plugins set up is swept and released below
			skipped = true
		}
		// with no plugin left this only drops libcni's cache entry
		if err := cni.DelNetworkList(ctx, list, runtimeConf(uuid, netns, n)); err != nil {
			errs = append(errs, fmt.Errorf("cannot remove pod %q from network %q: %w", uuid, n.Name, err))
		}
	}
	if (sweep || skipped || ex.tolerated()) && len(errs) == 0 {
		nets := make([]string, 0, len(res.Networks))
		for _, n := range res.Networks {
			nets = append(nets, n.Name)
		}
		if err := sweepIPTables(ctx, uuid, nets); err != nil {
			errs = append(errs, err)
		}
	}
	if (skipped || ex.tolerated()) && len(errs) == 0 {
		// a DEL that stopped at something gone may not have reached its IPAM
		if err := releaseReservations(ctx, cfg, uuid); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot tear down network of pod %q: %w", podDir, err)
	}
	return nil
}

// delCachedAttachments runs CNI DEL for every attachment libcni cached for
// the container ID uuid, in the namespace at netns. An entry cut short
// (brokenCacheEntries) lost the config it was added with: its DEL runs with
// the network's config of now (brokenEntry.del), and the pod's rules on
// its network are swept and its reservations released as well (its veth
// goes with the namespace), then the entry is removed.
func delCachedAttachments(ctx context.Context, cfg Config, uuid, netns string) error {
	cni, _ := newDelCNI(cfg)
	atts, err := cni.GetCachedAttachments(uuid)
	if err != nil {
		return fmt.Errorf("cannot list cached network attachments of pod %q: %w", uuid, err)
	}
	broken, err := brokenCacheEntries(cfg, uuid)
	if err != nil {
		return err
	}
	var errs []error
	var nets []string
	for _, a := range atts {
		a.NetNS = netns
		if err := delAttachment(ctx, cfg, cni, a); err != nil {
			errs = append(errs, err)
		}
		nets = append(nets, a.Network)
	}
	for _, b := range broken {
		if err := b.del(ctx, cfg, netns); err != nil {
			errs = append(errs, err)
		}
		nets = append(nets, b.network)
	}
	if len(nets) == 0 || len(errs) > 0 {
		return errors.Join(errs...)
	}
	// also what a DEL that stopped at something gone, or a plugin no
	// longer installed, left
	if err := sweepIPTables(ctx, uuid, nets); err != nil {
		return err
	}
	if err := releaseReservations(ctx, cfg, uuid); err != nil {
		return err
	}
	for _, b := range broken {
		if err := b.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// installedPlugins is list without the plugins missing from PluginDirs,
// or whose IPAM plugin is missing (the plugin delegates its DEL to it): their
// DEL would fail forever, keeping the pod from ever being removed. dropped
// says whether any was left out: what it set up (iptables rules tagged with
// the pod, host-local reservations) must then be swept by the caller.
func installedPlugins(cfg Config, list *libcni.NetworkConfigList) (kept *libcni.NetworkConfigList, dropped bool) {
	k := *list
	k.Plugins = nil
	for _, p := range list.Plugins {
		_, err := findPlugin(cfg, p.Network.Type)
		if err == nil && p.Network.IPAM.Type != "" {
			_, err = findPlugin(cfg, p.Network.IPAM.Type)
		}
		if err != nil {
			dropped = true
			continue
		}
		k.Plugins = append(k.Plugins, p)
	}
	return &k, dropped
}
