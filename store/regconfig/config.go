// Package regconfig reads rkt's configuration directories: registry
// credentials (kind "dockerAuth") and registry mirrors (kind
// "registryMirror", which may also keep the registry itself from being
// contacted). Directories are read in order system < local < user;
// a later directory overrides what an earlier one said about the same
// registry.
package regconfig

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/rkt/rkt/pkg/confdir"
)

// Sub-directories of a configuration directory that hold JSON files.
const (
	AuthDir       = "auth.d"       // rkt's historical place for dockerAuth files
	RegistriesDir = "registries.d" // registryMirror (and dockerAuth) files
)

// Credentials are a user name and password (or identity token) for a registry.
type Credentials struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// Mirror is one endpoint that serves a registry's content.
type Mirror struct {
	Endpoint string `json:"endpoint"`           // host[:port]
	Insecure bool   `json:"insecure,omitempty"` // plain HTTP and unverified TLS allowed
}

// Config is the merged configuration of all directories.
type Config struct {
	// Auth maps a normalized registry host to its credentials.
	Auth map[string]Credentials
	// Mirrors maps a normalized registry host to its mirrors, tried in order.
	Mirrors map[string][]Mirror
	// NoUpstream holds the normalized registry hosts never contacted
	// themselves ("upstream": false): only their mirrors are; with none,
	// the registry is blocked.
	NoUpstream map[string]bool
}

// header is the common part of every rkt configuration file.
type header struct {
	Kind    string `json:"rktKind"`
	Version string `json:"rktVersion"`
}

type dockerAuthV1 struct {
	Registries  []string    `json:"registries"`
	Credentials Credentials `json:"credentials"`
}

type registryMirrorV1 struct {
	Registry string   `json:"registry"`
	Mirrors  []Mirror `json:"mirrors"`
	// Upstream false: the registry itself is never contacted, only its
	// mirrors (an offline node's setting; with no mirrors, a blocked
	// registry). Default true: the registry is tried after its mirrors.
	Upstream *bool `json:"upstream,omitempty"`
}

// NormalizeRegistry maps the aliases of Docker Hub to "docker.io" and
// lower-cases the host, so lookups match however the registry was spelled.
func NormalizeRegistry(host string) string {
	h := strings.ToLower(host)
	for t := ""; t != h; {
		t, h = h, strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
	}
	h = strings.TrimRight(h, "/")
	switch h {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return "docker.io"
	}
	return h
}

// Load reads the given configuration directories in order (system, local,
// user); empty or missing directories are skipped. Within one directory two
// files configuring the same registry are an error; across directories the
// later one wins.
func Load(dirs ...string) (*Config, error) {
	c := newConfig()
	for _, d := range dirs {
		if d == "" {
			continue
		}
		dc, err := loadDir(d)
		if err != nil {
			return nil, err
		}
		for k, v := range dc.Auth {
			c.Auth[k] = v
		}
		for k, v := range dc.Mirrors { // a registry's file overrides it whole
			c.Mirrors[k] = v
			if dc.NoUpstream[k] {
				c.NoUpstream[k] = true
			} else {
				delete(c.NoUpstream, k)
			}
		}
	}
	return c, nil
}

func newConfig() *Config {
	return &Config{Auth: map[string]Credentials{}, Mirrors: map[string][]Mirror{}, NoUpstream: map[string]bool{}}
}

// AuthFor returns the credentials configured for a registry host.
func (c *Config) AuthFor(registry string) (Credentials, bool) {
	if c == nil {
		return Credentials{}, false
	}
	cr, ok := c.Auth[NormalizeRegistry(registry)]
	return cr, ok
}

// MirrorsFor returns the mirrors configured for a registry host, in order.
func (c *Config) MirrorsFor(registry string) []Mirror {
	if c == nil {
		return nil
	}
	return c.Mirrors[NormalizeRegistry(registry)]
}

// UpstreamAllowed reports whether a registry host may be contacted itself
// (after its mirrors).
func (c *Config) UpstreamAllowed(registry string) bool {
	return c == nil || !c.NoUpstream[NormalizeRegistry(registry)]
}

func loadDir(dir string) (*Config, error) {
	c := newConfig()
	authFrom := map[string]string{}
	mirrorFrom := map[string]string{}
	for _, sub := range []string{AuthDir, RegistriesDir} {
		files, err := confdir.JSONFiles(filepath.Join(dir, sub))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if err := loadFile(f, c, authFrom, mirrorFrom); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

func loadFile(path string, c *Config, authFrom, mirrorFrom map[string]string) error {
	b, err := confdir.ReadFile(path)
	if err != nil {
		return err
	}
	var h header
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("cannot parse config file %q: %w", path, err)
	}
	if h.Version != "v1" {
		return fmt.Errorf("config file %q: unsupported rktVersion %q for kind %q", path, h.Version, h.Kind)
	}
	switch h.Kind {
	case "dockerAuth":
		var a dockerAuthV1
		if err := json.Unmarshal(b, &a); err != nil {
			return fmt.Errorf("cannot parse dockerAuth file %q: %w", path, err)
		}
		if len(a.Registries) == 0 {
			return fmt.Errorf("dockerAuth file %q: no registries", path)
		}
		for _, r := range a.Registries {
			k := NormalizeRegistry(r)
			if k == "" {
				return fmt.Errorf("dockerAuth file %q: empty registry name", path)
			}
			if prev, dup := authFrom[k]; dup {
				return fmt.Errorf("credentials for registry %q defined twice: in %q and %q", r, prev, path)
			}
			authFrom[k] = path
			c.Auth[k] = a.Credentials
		}
	case "registryMirror":
		var m registryMirrorV1
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("cannot parse registryMirror file %q: %w", path, err)
		}
		upstream := m.Upstream == nil || *m.Upstream
		if m.Registry == "" || (len(m.Mirrors) == 0 && upstream) {
			return fmt.Errorf("registryMirror file %q: needs a registry and at least one mirror (or \"upstream\": false to block it)", path)
		}
		for _, mi := range m.Mirrors {
			if err := checkEndpoint(mi.Endpoint); err != nil {
				return fmt.Errorf("registryMirror file %q: %w", path, err)
			}
		}
		k := NormalizeRegistry(m.Registry)
		if k == "" {
			return fmt.Errorf("registryMirror file %q: empty registry name", path)
		}
		if prev, dup := mirrorFrom[k]; dup {
			return fmt.Errorf("mirrors for registry %q defined twice: in %q and %q", m.Registry, prev, path)
		}
		mirrorFrom[k] = path
		c.Mirrors[k] = m.Mirrors
		if !upstream {
			c.NoUpstream[k] = true
		}
	case "auth":
		// rkt's HTTP auth for ACI image URLs: no ACI fetching here, ignored.
	default:
		return fmt.Errorf("config file %q: unknown rktKind %q", path, h.Kind)
	}
	return nil
}

// checkEndpoint accepts a mirror endpoint that is host[:port] and nothing
// more (no scheme, path, user or query).
func checkEndpoint(ep string) error {
	if _, err := name.NewRegistry(ep, name.StrictValidation); err != nil || strings.Contains(ep, "/") {
		return fmt.Errorf("mirror endpoint %q must be host[:port]", ep)
	}
	return nil
}
