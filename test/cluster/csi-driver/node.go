package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	resp := &csi.NodeGetInfoResponse{NodeId: d.cfg.nodeID}
	if len(d.cfg.topology) > 0 {
		resp.AccessibleTopology = &csi.Topology{Segments: d.cfg.topology}
	}
	return resp, nil
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	rpc := func(t csi.NodeServiceCapability_RPC_Type) *csi.NodeServiceCapability {
		return &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}}
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
		rpc(csi.NodeServiceCapability_RPC_EXPAND_VOLUME),
		rpc(csi.NodeServiceCapability_RPC_GET_VOLUME_STATS),
	}}, nil
}

func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "target path is required")
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		return nil, status.Error(codes.InvalidArgument, "block volumes are not supported")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, data, err := d.nodeVolume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if mounted, err := isMountPoint(target); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "creating %s: %v", target, err)
	}
	var flags uintptr
	if req.GetReadonly() {
		flags |= unix.MS_RDONLY
	}
	if v.Backing == backingDir {
		if err := unix.Mount(data, target, "", unix.MS_BIND, ""); err != nil {
			return nil, status.Errorf(codes.Internal, "bind-mounting %s: %v", data, err)
		}
		if err := d.growWhileMounting(v, target); err != nil {
			return nil, err
		}
		if req.GetReadonly() {
			if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return nil, status.Errorf(codes.Internal, "remounting %s read-only: %v", target, err)
			}
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if d.nodeOnly() {
		if err := formatIfBlank(data); err != nil {
			return nil, status.Errorf(codes.Internal, "formatting %s: %v", data, err)
		}
	}
	dev, err := attachLoop(data)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "attaching %s: %v", data, err)
	}
	if err := unix.Mount(dev, target, "xfs", flags, ""); err != nil {
		_ = run("losetup", "-d", dev)
		return nil, status.Errorf(codes.Internal, "mounting %s on %s: %v", dev, target, err)
	}
	if v.OfflineNodeExpansion && v.FilesystemBytes < v.CapacityBytes {
		// Before the pod sees it: the "offline" grow of a driver that grows at mount time.
		if err := run("losetup", "-c", dev); err != nil {
			return nil, status.Errorf(codes.Internal, "refreshing %s: %v", dev, err)
		}
		if err := run("xfs_growfs", target); err != nil {
			return nil, status.Errorf(codes.Internal, "xfs_growfs %s: %v", target, err)
		}
	}
	if err := d.growWhileMounting(v, target); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// growWhileMounting records, for a volume of the offline mode, that its filesystem now has the
// volume's size: it was grown as the volume was mounted anew; and, for a volume the controller
// grows only offline, the target it is now published at.
func (d *driver) growWhileMounting(v *volume, target string) error {
	if d.nodeOnly() {
		return nil
	}
	changed := false
	if v.OfflineNodeExpansion && v.FilesystemBytes < v.CapacityBytes {
		v.FilesystemBytes, changed = v.CapacityBytes, true
	}
	if v.OfflineControllerExpansion && !slices.Contains(v.PublishedTargets, target) {
		v.PublishedTargets, changed = append(v.PublishedTargets, target), true
	}
	if !changed {
		return nil
	}
	if err := d.store.put(v); err != nil {
		return status.Errorf(codes.Internal, "recording %s: %v", v.ID, err)
	}
	return nil
}

// unpublished forgets a target of a volume the controller grows only offline.
func (d *driver) unpublished(id, target string) error {
	v, err := d.store.get(id)
	if err != nil || !v.OfflineControllerExpansion || !slices.Contains(v.PublishedTargets, target) {
		return nil
	}
	v.PublishedTargets = slices.DeleteFunc(v.PublishedTargets, func(t string) bool { return t == target })
	if err := d.store.put(v); err != nil {
		return status.Errorf(codes.Internal, "recording %s: %v", v.ID, err)
	}
	return nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	d.mu.Lock()
	defer d.mu.Unlock()
	mounted, err := isMountPoint(target)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if mounted {
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmounting %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
		return nil, status.Errorf(codes.Internal, "removing %s: %v", target, err)
	}
	if v, data, err := d.nodeVolume(req.GetVolumeId()); err == nil && v.Backing == backingXFS {
		// The loop device is released once no mount uses it; losetup -d on a busy device only
		// marks it for autoclear, which is what we want when another target still mounts it.
		if dev, _ := loopDeviceOf(data); dev != "" {
			_ = run("losetup", "-d", dev)
		}
	}
	if !d.nodeOnly() {
		if err := d.unpublished(req.GetVolumeId(), target); err != nil {
			return nil, err
		}
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeExpandVolume grows the filesystem online: XFS volumes get their loop device resized and
// xfs_growfs; directory volumes have nothing to grow.
func (d *driver) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, data, err := d.nodeVolume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if v.OfflineNodeExpansion {
		required := req.GetCapacityRange().GetRequiredBytes()
		if required == 0 || required > v.CapacityBytes {
			required = v.CapacityBytes
		}
		if v.FilesystemBytes < required {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is in use: this driver grows its filesystem only when the volume is mounted anew (filesystem %d bytes, volume %d)", v.ID, v.FilesystemBytes, required)
		}
		return &csi.NodeExpandVolumeResponse{CapacityBytes: v.CapacityBytes}, nil
	}
	if v.Backing == backingXFS {
		dev, err := loopDeviceOf(data)
		if err != nil || dev == "" {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not attached on this node", v.ID)
		}
		if err := run("losetup", "-c", dev); err != nil {
			return nil, status.Errorf(codes.Internal, "refreshing %s: %v", dev, err)
		}
		if err := run("xfs_growfs", req.GetVolumePath()); err != nil {
			return nil, status.Errorf(codes.Internal, "xfs_growfs %s: %v", req.GetVolumePath(), err)
		}
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: v.CapacityBytes}, nil
}

// NodeGetVolumeStats reports statfs of the mounted path: the volume's own filesystem for XFS
// volumes, the state dir's filesystem for directory volumes (as csi-driver-host-path does).
func (d *driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if _, _, err := d.nodeVolume(req.GetVolumeId()); err != nil {
		return nil, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(req.GetVolumePath(), &st); err != nil {
		return nil, status.Errorf(codes.NotFound, "statfs %s: %v", req.GetVolumePath(), err)
	}
	bs := int64(st.Bsize)
	total, avail := int64(st.Blocks)*bs, int64(st.Bavail)*bs
	used := (int64(st.Blocks) - int64(st.Bfree)) * bs
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: total, Available: avail, Used: used},
		{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files) - int64(st.Ffree)},
	}}, nil
}

// nodeVolume finds a volume and the path of its data: in the driver's own store, or, in node-only
// mode, as the image file the other controller's cloud made (its size is the volume's capacity).
// Errors are gRPC statuses (NotFound when there is no such volume).
func (d *driver) nodeVolume(id string) (*volume, string, error) {
	if d.nodeOnly() {
		// An ID is a file name (EBS: vol-…) or a relative path (GCE PD: projects/P/zones/Z/disks/D)
		// under the images directory; nothing that leaves it.
		if !filepath.IsLocal(id) || filepath.Clean(id) != id || strings.HasPrefix(filepath.Base(id), ".") {
			return nil, "", status.Errorf(codes.InvalidArgument, "invalid volume ID %q", id)
		}
		data := filepath.Join(d.cfg.volumeImages, id+".img")
		info, err := os.Stat(data)
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", status.Errorf(codes.NotFound, "volume %s not found (no image %s)", id, data)
		}
		if err != nil {
			return nil, "", status.Error(codes.Internal, err.Error())
		}
		return &volume{ID: id, Backing: backingXFS, CapacityBytes: info.Size()}, data, nil
	}
	v, err := d.store.get(id)
	if err == errNotFound {
		return nil, "", status.Errorf(codes.NotFound, "volume %s not found", id)
	}
	if err != nil {
		return nil, "", status.Error(codes.Internal, err.Error())
	}
	return v, d.store.dataPath(v), nil
}

// formatIfBlank makes an XFS filesystem on an image that has none yet (a new volume), and leaves
// one that has data alone: XFS's superblock starts with the magic "XFSB".
func formatIfBlank(image string) error {
	f, err := os.Open(image)
	if err != nil {
		return err
	}
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	f.Close()
	if err != nil {
		return err
	}
	if string(magic) == "XFSB" {
		return nil
	}
	if !bytes.Equal(magic, make([]byte, 4)) {
		return fmt.Errorf("%s holds data that is not XFS; refusing to format it", image)
	}
	return run("mkfs.xfs", "-q", image)
}

func isMountPoint(path string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && unescapeMountPath(fields[4]) == path {
			return true, nil
		}
	}
	return false, s.Err()
}

// mountinfo escapes space, tab, newline and backslash as octal.
func unescapeMountPath(p string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(p)
}

func attachLoop(file string) (string, error) {
	if dev, err := loopDeviceOf(file); err != nil || dev != "" {
		return dev, err
	}
	out, err := output("losetup", "--find", "--show", file)
	return strings.TrimSpace(out), err
}

// loopDeviceOf returns the loop device backed by file, or "" if none.
func loopDeviceOf(file string) (string, error) {
	out, err := output("losetup", "-j", file)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	dev, _, found := strings.Cut(line, ":")
	if !found {
		return "", nil
	}
	return dev, nil
}

func run(name string, args ...string) error {
	_, err := output(name, args...)
	return err
}

func output(name string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
