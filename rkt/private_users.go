package main

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// privateUsers converts --private-users=0:HOSTID:LENGTH to a pod user
// namespace with that mapping for uids and gids ("" : none).
func privateUsers(s string) (*schema.UserNamespace, error) {
	if s == "" {
		return nil, nil
	}
	m, err := stage0.ParseIDMapping(s)
	if err != nil {
		return nil, fmt.Errorf("invalid --private-users: %w", err)
	}
	return &schema.UserNamespace{
		UIDMappings: []specs.LinuxIDMapping{m},
		GIDMappings: []specs.LinuxIDMapping{m},
	}, nil
}
