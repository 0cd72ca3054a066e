package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rkt/rkt/stage0"
)

// podJSON is a pod as list and status print it with --format=json.
type podJSON struct {
	UUID        string            `json:"uuid"`
	State       string            `json:"state"`
	Apps        []appJSON         `json:"apps"`
	Networks    []netJSON         `json:"networks,omitempty"`
	Pid         int               `json:"pid,omitempty"`
	ExitCode    int               `json:"exitCode"`
	CreatedAt   *time.Time        `json:"createdAt,omitempty"`
	StartedAt   *time.Time        `json:"startedAt,omitempty"`
	FinishedAt  *time.Time        `json:"finishedAt,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type appJSON struct {
	Name        string            `json:"name"`
	Image       string            `json:"image"`
	ImageID     string            `json:"imageID"`
	State       string            `json:"state"`
	Pid         int               `json:"pid,omitempty"`
	ExitCode    int               `json:"exitCode"`
	Signal      string            `json:"signal,omitempty"`
	OOMKilled   bool              `json:"oomKilled,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	CreatedAt   *time.Time        `json:"createdAt,omitempty"`
	StartedAt   *time.Time        `json:"startedAt,omitempty"`
	FinishedAt  *time.Time        `json:"finishedAt,omitempty"`
	LogPath     string            `json:"logPath"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type netJSON struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface,omitempty"`
	IPs       []string `json:"ips,omitempty"`
	Gateway   string   `json:"gateway,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toJSON(ps *stage0.PodStatus) podJSON {
	j := podJSON{
		UUID: ps.UUID, State: string(ps.State), Pid: ps.Stage1PID, ExitCode: ps.ExitCode,
		CreatedAt: timePtr(ps.CreatedAt), StartedAt: timePtr(ps.StartedAt), FinishedAt: timePtr(ps.FinishedAt),
		Apps: []appJSON{},
	}
	if ps.Manifest != nil {
		j.Annotations = ps.Manifest.Annotations
	}
	for _, a := range ps.Apps {
		j.Apps = append(j.Apps, appToJSON(a))
	}
	for _, n := range ps.Networks {
		j.Networks = append(j.Networks, netJSON{Name: n.Name, Interface: n.Interface, IPs: n.IPs, Gateway: n.Gateway})
	}
	return j
}

func appToJSON(a stage0.AppStatus) appJSON {
	return appJSON{
		Name: a.App.Name, Image: a.ImageRef, ImageID: a.App.Image.ID, State: string(a.State),
		Pid: a.Pid, ExitCode: a.ExitCode, Signal: a.Signal, OOMKilled: a.OOMKilled, Reason: a.Reason,
		CreatedAt: timePtr(a.CreatedAt), StartedAt: timePtr(a.StartedAt), FinishedAt: timePtr(a.FinishedAt),
		LogPath: a.LogPath, Annotations: a.App.Annotations,
	}
}

// writeJSON prints v for --format=json or json-pretty.
func writeJSON(w io.Writer, format string, v any) error {
	enc := json.NewEncoder(w)
	if format == "json-pretty" {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

func checkFormat(format string) error {
	switch format {
	case "", "json", "json-pretty":
		return nil
	}
	return fmt.Errorf("invalid --format %q: want json or json-pretty", format)
}

// networksString renders networks as rkt did: name:ip4=1.2.3.4,...
func networksString(nets []stage0.NetworkStatus) string {
	var parts []string
	for _, n := range nets {
		for _, ip := range n.IPs {
			addr, _, _ := strings.Cut(ip, "/")
			kind := "ip4"
			if strings.Contains(addr, ":") {
				kind = "ip6"
			}
			parts = append(parts, fmt.Sprintf("%s:%s=%s", n.Name, kind, addr))
		}
	}
	return strings.Join(parts, ",")
}
