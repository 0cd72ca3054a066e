package kubeletsvc

import (
	"fmt"
	"strings"

	"github.com/moby/sys/capability"
)

// heldCapabilities returns the capabilities this process may grant (its
// bounding set) and those the kernel knows but it may not grant, as
// CAP_X names. As containerd's CRI plugin does, "ALL" and privileged
// containers mean every capability the runtime holds: root here may lack
// some (e.g. CAP_SYS_RESOURCE), and asking for those fails the start.
func heldCapabilities() (held, lacking []string, err error) {
	c, err := capability.NewPid2(0)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the runtime's capabilities: %w", err)
	}
	if err := c.Load(); err != nil {
		return nil, nil, fmt.Errorf("cannot read the runtime's capabilities: %w", err)
	}
	supported, err := capability.ListSupported()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot list the kernel's capabilities: %w", err)
	}
	for _, k := range supported {
		name := "CAP_" + strings.ToUpper(k.String())
		if c.Get(capability.BOUNDING, k) {
			held = append(held, name)
		} else {
			lacking = append(lacking, name)
		}
	}
	return held, lacking, nil
}
