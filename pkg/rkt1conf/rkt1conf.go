// Package rkt1conf reads what rkt 1.x kept in its configuration
// directories (/usr/lib/rkt, /etc/rkt) that no other reader here takes:
// paths.d, whose data directory is honoured, and stage1.d, trustedkeys/
// and ACI "auth" files, which this rkt does not use and reports. auth.d's
// dockerAuth files are read by store/regconfig, net.d by networking.
package rkt1conf

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rkt/rkt/pkg/confdir"
)

// Sub-directories of a configuration directory.
const (
	PathsDir       = "paths.d"
	Stage1Dir      = "stage1.d"
	TrustedKeysDir = "trustedkeys"
	AuthDir        = "auth.d"
)

type header struct {
	Kind    string `json:"rktKind"`
	Version string `json:"rktVersion"`
}

type pathsV1 struct {
	Data         string `json:"data"`
	Stage1Images string `json:"stage1-images"`
}

func readHeader(path string) ([]byte, header, error) {
	b, err := confdir.ReadFile(path)
	if err != nil {
		return nil, header{}, err
	}
	var h header
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, header{}, fmt.Errorf("cannot parse config file %q: %w", path, err)
	}
	return b, h, nil
}

// DataDir returns the data directory that the "paths" files of the
// configuration directories set ("" if none), as rkt 1.x read them: a
// later directory overrides an earlier one, two files of one directory
// setting it is an error, and the path must be absolute.
func DataDir(dirs ...string) (string, error) {
	data := ""
	for _, d := range dirs {
		if d == "" {
			continue
		}
		files, err := confdir.JSONFiles(filepath.Join(d, PathsDir))
		if err != nil {
			return "", err
		}
		from := ""
		for _, f := range files {
			b, h, err := readHeader(f)
			if err != nil {
				return "", err
			}
			if h.Kind != "paths" || h.Version != "v1" {
				return "", fmt.Errorf("config file %q: want rktKind \"paths\", rktVersion \"v1\", not %q, %q", f, h.Kind, h.Version)
			}
			var p pathsV1
			if err := json.Unmarshal(b, &p); err != nil {
				return "", fmt.Errorf("cannot parse paths file %q: %w", f, err)
			}
			if p.Data == "" {
				continue
			}
			if from != "" {
				return "", fmt.Errorf("data directory set twice: in %q and %q", from, f)
			}
			if !filepath.IsAbs(p.Data) {
				return "", fmt.Errorf("paths file %q: data directory %q is not absolute", f, p.Data)
			}
			data, from = p.Data, f
		}
	}
	return data, nil
}

// Unused describes, one line each, the rkt 1.x configuration in dirs that
// this rkt ignores.
func Unused(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if files, _ := confdir.JSONFiles(filepath.Join(d, Stage1Dir)); len(files) > 0 {
			out = append(out, fmt.Sprintf("%s: rkt 1.x stage1 images are not used (this rkt's stage1 is a binary: --stage1-path)", filepath.Join(d, Stage1Dir)))
		}
		if fi, err := os.Stat(filepath.Join(d, TrustedKeysDir)); err == nil && fi.IsDir() {
			out = append(out, fmt.Sprintf("%s: ACI signing keys are not used (no ACI is fetched from the network)", filepath.Join(d, TrustedKeysDir)))
		}
		files, _ := confdir.JSONFiles(filepath.Join(d, PathsDir))
		for _, f := range files {
			b, h, err := readHeader(f)
			var p pathsV1
			if err == nil && h.Kind == "paths" && json.Unmarshal(b, &p) == nil && p.Stage1Images != "" {
				out = append(out, fmt.Sprintf("%s: stage1-images is not used", f))
			}
		}
		files, _ = confdir.JSONFiles(filepath.Join(d, AuthDir))
		for _, f := range files {
			if _, h, err := readHeader(f); err == nil && h.Kind == "auth" {
				out = append(out, fmt.Sprintf("%s: rktKind \"auth\" (credentials for ACI downloads) is not used; registries take \"dockerAuth\"", f))
			}
		}
	}
	return out
}
