package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

const (
	backingDir = "dir"
	backingXFS = "xfs"
	// mkfs.xfs (xfsprogs 6.x) refuses filesystems smaller than 300 MiB.
	minXFSBytes = 300 << 20
)

// volume is the driver's durable record of one volume, kept as JSON in <state-dir>/meta.
type volume struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Backing       string `json:"backing"`
	CapacityBytes int64  `json:"capacityBytes"`
	// MaxBytes is the class's maxVolumeSize (0: none); ControllerExpandVolume does not receive
	// StorageClass parameters, so the limit is kept with the volume.
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// ControllerOnly: expansion needs no node step (the class's nodeExpansion: "none"), as with
	// drivers whose volumes grow online from the controller (network file systems).
	ControllerOnly bool `json:"controllerOnly,omitempty"`
	// OfflineNodeExpansion: the class's nodeExpansion: "offline". The filesystem grows only when
	// the volume is mounted anew (at NodePublishVolume, as drivers that grow it at stage time do);
	// NodeExpandVolume on a volume in use whose filesystem is smaller than asked refuses with
	// FailedPrecondition, the CSI spec's "volume in use" answer, and the kubelet waits for a
	// remount. FilesystemBytes is what the filesystem was last grown to.
	OfflineNodeExpansion bool  `json:"offlineNodeExpansion,omitempty"`
	FilesystemBytes      int64 `json:"filesystemBytes,omitempty"`
	// OfflineControllerExpansion: the class's controllerExpansion: "offline", as drivers that grow
	// a volume only detached (Azure Disk past 4 TiB, vCenter before 7.0U2): ControllerExpandVolume
	// refuses with FailedPrecondition while the volume is published at any target, which the
	// external-resizer takes as "grows only offline" and retries once no pod uses the claim.
	OfflineControllerExpansion bool     `json:"offlineControllerExpansion,omitempty"`
	PublishedTargets           []string `json:"publishedTargets,omitempty"`
}

type store struct{ dir string }

func openStore(dir string) (*store, error) {
	for _, sub := range []string{"meta", "volumes", "faults"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
			return nil, err
		}
	}
	return &store{dir: dir}, nil
}

// volumeID is derived from the CreateVolume name, which the provisioner keeps stable across
// retries, so a repeated CreateVolume finds the volume it already made.
func volumeID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "pvx-" + hex.EncodeToString(sum[:10])
}

func (s *store) metaPath(id string) string { return filepath.Join(s.dir, "meta", id+".json") }

// dataPath is the directory (dir backing) or image file (xfs backing) holding the volume's data.
func (s *store) dataPath(v *volume) string {
	if v.Backing == backingXFS {
		return filepath.Join(s.dir, "volumes", v.ID+".img")
	}
	return filepath.Join(s.dir, "volumes", v.ID)
}

var errNotFound = errors.New("volume not found")

func (s *store) get(id string) (*volume, error) {
	raw, err := os.ReadFile(s.metaPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	v := &volume{}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", id, err)
	}
	return v, nil
}

// put writes the record atomically (temp file + rename), so a crash never leaves half a record.
func (s *store) put(v *volume) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := s.metaPath(v.ID) + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, s.metaPath(v.ID))
}

func (s *store) remove(v *volume) error {
	if err := os.RemoveAll(s.dataPath(v)); err != nil {
		return err
	}
	if err := os.Remove(s.metaPath(v.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// fault returns the text of an injected fault file, or "" when none is set.
func (s *store) fault(name string) string {
	raw, err := os.ReadFile(filepath.Join(s.dir, "faults", name))
	if err != nil {
		return ""
	}
	if len(raw) == 0 {
		return "injected fault: " + name
	}
	return string(raw)
}
