package networking

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/rkt/rkt/pkg/fileperm"
)

// subnetFile keeps the pod CIDR set by SetDefaultSubnet (CRI
// UpdateRuntimeConfig), shared by every process using the same data dir.
const subnetFile = "default-subnet"

// subnet returns the default network's subnet: Config.DefaultSubnet, else
// the saved pod CIDR, else DefaultSubnet.
func (c Config) subnet() (string, error) {
	if c.DefaultSubnet != "" {
		return validSubnet(c.DefaultSubnet)
	}
	data, err := os.ReadFile(c.subnetFile())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return DefaultSubnet, nil
	case err != nil:
		return "", fmt.Errorf("cannot read default network subnet: %w", err)
	}
	return validSubnet(strings.TrimSpace(string(data)))
}

func (c Config) subnetFile() string { return filepath.Join(c.stateDir(), subnetFile) }

func validSubnet(s string) (string, error) {
	ip, ipnet, err := net.ParseCIDR(s)
	if err != nil {
		return "", fmt.Errorf("invalid subnet %q: %w", s, err)
	}
	if ip.To4() == nil {
		return "", fmt.Errorf("invalid subnet %q: the default network is IPv4 only", s)
	}
	if ones, bits := ipnet.Mask.Size(); bits-ones < 2 {
		return "", fmt.Errorf("invalid subnet %q: too small for pods", s)
	}
	return ipnet.String(), nil
}

// SetDefaultSubnet saves cidr as the subnet of the "default" network for
// pods set up from now on (CRI UpdateRuntimeConfig's pod CIDR). A dual-stack
// kubelet sends a comma-separated list: the default network is IPv4 only and
// takes the list's first IPv4 CIDR. An empty cidr goes back to DefaultSubnet.
func SetDefaultSubnet(cfg Config, cidr string) error {
	path := cfg.subnetFile()
	if strings.Contains(cidr, ",") {
		var v4 string
		for _, c := range strings.Split(cidr, ",") {
			c = strings.TrimSpace(c)
			if ip, _, err := net.ParseCIDR(c); err == nil && ip.To4() != nil {
				v4 = c
				break
			}
		}
		if v4 == "" {
			return fmt.Errorf("invalid pod CIDR list %q: no IPv4 CIDR (the default network is IPv4 only)", cidr)
		}
		cidr = v4
	}
	if cidr == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cannot reset default network subnet: %w", err)
		}
		return nil
	}
	subnet, err := validSubnet(cidr)
	if err != nil {
		return err
	}
	if err := fileperm.MkdirAll(filepath.Dir(path), fileperm.Private); err != nil {
		return err
	}
	return fileperm.WriteFile(path, []byte(subnet+"\n"), fileperm.Private)
}

// DefaultNetworkSubnet returns the subnet the "default" network uses now.
func DefaultNetworkSubnet(cfg Config) (string, error) { return cfg.subnet() }
