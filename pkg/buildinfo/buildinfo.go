// Package buildinfo holds the version and the paths chosen at configure
// time. The Makefile stamps them with -ldflags "-X ..."; the values below are
// the built-in defaults used when configure was not run.
package buildinfo

import "strings"

var (
	// Version is the rkt version (git describe at build time).
	Version = "0.0.0-dev"
	// DataDir is the default --dir.
	DataDir = "/var/lib/rkt"
	// Stage1Path is where the stage1 binary is installed.
	Stage1Path = "/usr/lib/rkt/stage1"
	// SystemConfigDir is the vendor configuration directory (--system-config).
	SystemConfigDir = "/usr/lib/rkt"
	// LocalConfigDir is the administrator's configuration directory (--local-config).
	LocalConfigDir = "/etc/rkt"
	// SocketPath is the default kubelet-service socket.
	SocketPath = "/run/rkt/kubelet-service.sock"
	// SocketGroup is the default group allowed on the kubelet-service socket.
	SocketGroup = "rkt"
	// CNIConfDir is the default directory of named CNI network configs.
	CNIConfDir = "/etc/rkt/net.d"
	// CNIPluginDirs is a colon-separated list of CNI plugin directories.
	CNIPluginDirs = "/usr/lib/cni:/opt/cni/bin"
)

// PluginDirs returns CNIPluginDirs as a list.
func PluginDirs() []string {
	var dirs []string
	for _, d := range strings.Split(CNIPluginDirs, ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}
