package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/store"
)

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{5 << 20, "5.0 MiB"}, {3 << 30, "3.0 GiB"},
	} {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestProgressBar(t *testing.T) {
	for _, tc := range []struct {
		cur, total int64
		done       bool
		want       string
	}{
		{0, 100, false, ">         "},
		{50, 100, false, "=====>    "},
		{100, 100, false, "=========="},
		{10, 0, false, ">         "},
		{0, 0, true, "=========="},
		{200, 100, false, "=========="},
	} {
		if got := progressBar(tc.cur, tc.total, tc.done, 10); got != tc.want {
			t.Errorf("progressBar(%d, %d, %v) = %q, want %q", tc.cur, tc.total, tc.done, got, tc.want)
		}
	}
}

func TestProgressBarsDraw(t *testing.T) {
	var buf bytes.Buffer
	p := &progressBars{w: &buf, width: 100, title: "img", blobs: map[string]*layerProgress{}}
	p.Update(store.Progress{Digest: "sha256:aaaaaaaaaaaaaaaa", Total: 2048, Current: 1024})
	p.Update(store.Progress{Digest: "sha256:bbbbbbbbbbbbbbbb", Total: 10, Current: 10, Done: true})
	p.SetStatus("unpacking")
	p.Finish(true)
	p.Update(store.Progress{Digest: "sha256:cccccccccccc", Total: 1})
	out := buf.String()
	for _, want := range []string{"Fetching img", "Fetching img: unpacking", "Fetching img: done", "aaaaaaaaaaaa [", "1.0 KiB / 2.0 KiB", "bbbbbbbbbbbb", "done", "\x1b[3A"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q: %q", want, out)
		}
	}
	if strings.Contains(out, "cccccccccccc") {
		t.Errorf("drew after Finish: %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 100+len("\x1b[3A\x1b[2K") {
			t.Errorf("line wider than the terminal: %q", line)
		}
	}
}

func TestHumanAgo(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "just now"}, {time.Second, "1 second ago"}, {90 * time.Second, "1 minute ago"},
		{3 * time.Hour, "3 hours ago"}, {72 * time.Hour, "3 days ago"},
	} {
		if got := humanAgo(tc.d); got != tc.want {
			t.Errorf("humanAgo(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestPrintImages(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	imgs := []*store.Image{
		{ID: "sha256:0123456789abcdef0123", Names: []string{"docker.io/library/a:1", "docker.io/library/a:2"}, Size: 2048,
			ImportedAt: now.Add(-2 * time.Hour), LastUsedAt: now.Add(-time.Minute)},
		{ID: "sha256:fedcba9876543210fedc", Size: 10, ImportedAt: now.Add(-time.Hour)},
	}
	var buf bytes.Buffer
	if err := printImages(&buf, imgs, imageListFlags{}, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("table:\n%s", buf.String())
	}
	if !strings.Contains(lines[1], "0123456789ab ") || !strings.Contains(lines[1], "2 hours ago") || !strings.Contains(lines[3], "<none>") {
		t.Errorf("rows:\n%s", buf.String())
	}
	buf.Reset()
	printImages(&buf, imgs, imageListFlags{noLegend: true, full: true}, now)
	if strings.Contains(buf.String(), "IMPORT") || !strings.Contains(buf.String(), "sha256:0123456789abcdef0123") {
		t.Errorf("--no-legend --full:\n%s", buf.String())
	}
	buf.Reset()
	if err := printImages(&buf, nil, imageListFlags{format: "json"}, now); err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Errorf("empty JSON: %q %v", buf.String(), err)
	}
	buf.Reset()
	printImages(&buf, imgs, imageListFlags{format: "json"}, now)
	var got []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil || len(got) != 2 || got[0]["id"] != imgs[0].ID {
		t.Errorf("JSON: %s %v", buf.String(), err)
	}
	if err := printImages(&buf, imgs, imageListFlags{format: "xml"}, now); err == nil {
		t.Errorf("bad format accepted")
	}
}

func TestParseCreds(t *testing.T) {
	if a, err := parseCreds("u:p:x"); err != nil || a.Username != "u" || a.Password != "p:x" {
		t.Errorf("u:p:x -> %+v %v", a, err)
	}
	if a, err := parseCreds(""); err != nil || a != nil {
		t.Errorf("empty -> %+v %v", a, err)
	}
	for _, bad := range []string{"nocolon", ":secretpw"} {
		_, err := parseCreds(bad)
		if err == nil || strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%q: %v (want an error that hides the password)", bad, err)
		}
	}
}
