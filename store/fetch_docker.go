package store

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// fetchDockerArchive imports an image of a `docker save` tarball,
// "PATH" (an archive of one image) or "PATH:name:tag" (one of its images).
func (s *Store) fetchDockerArchive(ctx context.Context, spec string, opts FetchOptions) (*Image, error) {
	path, want := splitArchiveRef(spec)
	opener := func() (io.ReadCloser, error) { return os.Open(path) }
	m, err := tarball.LoadManifest(opener)
	if err != nil {
		return nil, fmt.Errorf("cannot read docker archive %q: %w", path, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("docker archive %q holds no image", path)
	}
	var tag *name.Tag
	repoTags := m[0].RepoTags
	if want != "" {
		t, err := name.NewTag(want)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrInvalidRef, want, err)
		}
		tag, repoTags = &t, []string{want}
	} else if len(m) != 1 {
		var all []string
		for _, d := range m {
			all = append(all, d.RepoTags...)
		}
		return nil, fmt.Errorf("docker archive %q holds %d images (%q): name one as docker-archive:PATH:name:tag", path, len(m), all)
	}
	img, err := tarball.Image(opener, tag)
	if err != nil {
		return nil, fmt.Errorf("cannot read image of docker archive %q: %w", path, err)
	}
	names, err := normalizeNames(append(append([]string(nil), repoTags...), opts.Name))
	if err != nil {
		return nil, err
	}
	return s.importImage(ctx, img, names, nil, opts)
}

// splitArchiveRef splits "PATH[:name:tag]" at the first colon after which
// the prefix is an existing file (paths may contain colons).
func splitArchiveRef(spec string) (string, string) {
	isFile := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	}
	if isFile(spec) {
		return spec, ""
	}
	for i := 0; i < len(spec); i++ {
		if spec[i] == ':' && isFile(spec[:i]) {
			return spec[:i], spec[i+1:]
		}
	}
	return spec, ""
}
