package stage0

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// materializeApp mounts the app's rootfs and writes its runtime spec for the
// pod's current (final) directory.
func (r *Runtime) materializeApp(p *pod, pm *schema.PodManifest, name string) error {
	rec, err := readAppRecord(p, name)
	if err != nil {
		return err
	}
	return r.materializeRecord(p, pm, name, rec)
}

// materializeRecord is materializeApp with the app's record given. The
// spec is written atomically but not synced: it is derived from the
// record and the pod manifest, and only a running pod reads it (after a
// power loss the pod is gone; ContainerStatus answers without what it
// would have taken from a lost spec).
func (r *Runtime) materializeRecord(p *pod, pm *schema.PodManifest, name string, rec *appRecord) error {
	idx := appIndex(pm, name)
	if idx < 0 {
		return fmt.Errorf("app %q in pod %s: %w", name, p.uuid, ErrAppNotFound)
	}
	dir := p.appDir(name)
	mns, err := podMountNS(p)
	if err != nil {
		return fmt.Errorf("app %q: %w", name, err)
	}
	defer mns.Close()
	if err := mountAppRootfs(p, pm, dir, rec.Image.Layers, mns); err != nil {
		return fmt.Errorf("app %q: %w", name, err)
	}
	for _, v := range pm.Volumes {
		if v.Kind == "empty" || v.Kind == "" {
			if err := makeEmptyVolume(p.layout(), pm, v.Name); err != nil {
				return err
			}
		}
	}
	imageMounts, err := mountImageVolumes(dir, rec.Options, rec.ImageVolumes)
	if err != nil {
		return fmt.Errorf("app %q: %w", name, err)
	}
	// A supervisor in another mount namespace would not see them.
	mounts := []string{dir.Rootfs()}
	for i := range rec.ImageVolumes {
		mounts = append(mounts, dir.ImageVolume(i))
	}
	if err := mns.adopt(r.cfg.Stage1Path, mounts); err != nil {
		return fmt.Errorf("app %q: %w", name, err)
	}
	targetPID := 0
	if rec.Options.PIDMode == NamespaceTarget {
		st, err := control.ReadAppStatus(p.dir, rec.Options.PIDTarget)
		if err != nil || st.State != schema.AppRunning {
			return fmt.Errorf("app %q: PID namespace target %q is not running: %w", name, rec.Options.PIDTarget, ErrInvalid)
		}
		targetPID = st.Pid
	}
	spec, err := buildSpec(specInput{
		pod: pm, podDir: p.dir, app: pm.Apps[idx], image: &rec.Image, opts: rec.Options,
		rootfs: dir.Rootfs(), targetPID: targetPID, imageMounts: imageMounts,
	})
	if err != nil {
		return err
	}
	spec.Linux.Resources = r.withoutMissingHugetlb(spec.Linux.Resources)
	if err := writeJSON(dir.Spec(), spec, fileperm.Private, false); err != nil {
		return fmt.Errorf("cannot write the runtime spec of app %q: %w", name, err)
	}
	if r.view != nil {
		r.view.keepSpec(p.uuid, name, spec, dir.Spec())
	}
	return nil
}

// makeEmptyVolume creates the backing directory of an empty volume, open to
// every user of the pod, in the pod's root-only volumes directory.
func makeEmptyVolume(podDir schema.PodDir, pm *schema.PodManifest, name string) error {
	vols := podDir.Volumes()
	if err := fileperm.Mkdir(vols, fileperm.Private); err != nil {
		return err
	}
	if err := allowUserNS(pm, vols); err != nil {
		return err
	}
	dir := filepath.Join(vols, name)
	if err := os.Mkdir(dir, 0o777); err != nil {
		if os.IsExist(err) {
			return nil
		}
		return fmt.Errorf("cannot create volume %q: %w", name, err)
	}
	// 0777 whatever the umask: any user of the pod may write to it
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("cannot create volume %q: %w", name, err)
	}
	return nil
}
