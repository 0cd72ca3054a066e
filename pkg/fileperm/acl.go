package fileperm

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// POSIX ACL xattr layout (linux/posix_acl_xattr.h).
const (
	aclXattr     = "system.posix_acl_access"
	aclVersion   = 2
	aclUserObj   = 0x01
	aclGroupObj  = 0x04
	aclGroup     = 0x08
	aclMask      = 0x10
	aclOther     = 0x20
	aclUndefined = 0xffffffff
	aclSearch    = 1 // --x
)

// AllowSearch lets the host group gid pass through the directory dir (search
// only: no listing, no reading) on top of its class's mode, with a POSIX
// ACL. It lets the apps of a user-namespaced pod, whose root is an
// unprivileged host user, reach their rootfs while other users cannot.
func AllowSearch(dir string, gid uint32) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("cannot stat %q: %w", dir, err)
	}
	perm := func(shift uint) uint16 { return uint16(st.Mode>>shift) & 7 }
	group := perm(3)
	entries := []struct {
		tag  uint16
		perm uint16
		id   uint32
	}{
		{aclUserObj, perm(6), aclUndefined},
		{aclGroupObj, group, aclUndefined},
		{aclGroup, aclSearch, gid},
		{aclMask, group | aclSearch, aclUndefined},
		{aclOther, perm(0), aclUndefined},
	}
	buf := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		buf = binary.LittleEndian.AppendUint16(buf, e.tag)
		buf = binary.LittleEndian.AppendUint16(buf, e.perm)
		buf = binary.LittleEndian.AppendUint32(buf, e.id)
	}
	if err := unix.Setxattr(dir, aclXattr, buf, 0); err != nil {
		return fmt.Errorf("cannot let group %d search %q (the filesystem may not support POSIX ACLs): %w", gid, dir, err)
	}
	return nil
}
