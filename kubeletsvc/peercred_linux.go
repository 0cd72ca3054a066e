package kubeletsvc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// peerCredInfo is the gRPC AuthInfo of a unix-socket peer: its SO_PEERCRED.
type peerCredInfo struct {
	credentials.CommonAuthInfo
	ucred *unix.Ucred // nil when the peer is not on a unix socket
}

// AuthType implements credentials.AuthInfo.
func (peerCredInfo) AuthType() string { return "peercred" }

// peerCreds is a TransportCredentials that adds no security but records the
// peer's credentials (SO_PEERCRED) of each accepted unix connection.
type peerCreds struct{}

func (peerCreds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return conn, peerCredInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
}

func (peerCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	info := peerCredInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return conn, info, nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, nil, fmt.Errorf("cannot read the peer credentials: %w", err)
	}
	if credErr != nil {
		return nil, nil, fmt.Errorf("cannot read the peer credentials (SO_PEERCRED): %w", credErr)
	}
	info.ucred = cred
	return conn, info, nil
}

func (peerCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "peercred"}
}
func (p peerCreds) Clone() credentials.TransportCredentials { return p }
func (peerCreds) OverrideServerName(string) error           { return nil }

// errPermission marks a refused peer; the error mapping turns it into
// PermissionDenied.
var errPermission = errors.New("permission denied")

// authorizer admits root and members of one group.
type authorizer struct {
	gid int
	// groupsOf returns the supplementary groups of a process; replaced in tests.
	groupsOf func(pid int32) ([]int, error)
}

// check returns nil when the caller in ctx may use the service.
func (a *authorizer) check(ctx context.Context) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return fmt.Errorf("%w: no peer information", errPermission)
	}
	info, ok := p.AuthInfo.(peerCredInfo)
	if !ok || info.ucred == nil {
		return fmt.Errorf("%w: not a unix-socket peer", errPermission)
	}
	c := info.ucred
	if c.Uid == 0 || int(c.Gid) == a.gid {
		return nil
	}
	groups, err := a.groupsOf(c.Pid)
	if err != nil {
		return fmt.Errorf("%w: cannot read the groups of peer pid %d: %v", errPermission, c.Pid, err)
	}
	for _, g := range groups {
		if g == a.gid {
			return nil
		}
	}
	return fmt.Errorf("%w: peer uid %d gid %d (pid %d) is neither root nor in group %d", errPermission, c.Uid, c.Gid, c.Pid, a.gid)
}

// procGroups reads the supplementary groups of pid from /proc/<pid>/status.
func procGroups(pid int32) ([]int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseStatusGroups(f)
}

// parseStatusGroups parses the "Groups:" line of a /proc/<pid>/status file.
func parseStatusGroups(r io.Reader) ([]int, error) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "Groups:") {
			continue
		}
		var groups []int
		for _, field := range strings.Fields(strings.TrimPrefix(line, "Groups:")) {
			g, err := strconv.Atoi(field)
			if err != nil {
				return nil, fmt.Errorf("bad group %q in Groups line", field)
			}
			groups = append(groups, g)
		}
		return groups, nil
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("no Groups line")
}
