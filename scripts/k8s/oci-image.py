#!/usr/bin/env python3
"""An OCI image archive (for `ctr images import`) of one layer from a root file system folder.

    oci-image.py ROOTFS NAME OUT.tar [CONFIG_JSON]

scripts/k8s/node.sh makes the node's pause image with it (Kubernetes' own pause.c, built here),
and, without a release's image archive, the service's image from this clone's build.
"""
import hashlib
import io
import json
import os
import sys
import tarfile

rootfs, name, out = sys.argv[1], sys.argv[2], sys.argv[3]
config_extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}

layer_buf = io.BytesIO()
with tarfile.open(fileobj=layer_buf, mode="w") as layer_tar:
    for entry in sorted(os.listdir(rootfs)):
        layer_tar.add(os.path.join(rootfs, entry), arcname=entry)
layer = layer_buf.getvalue()
layer_digest = hashlib.sha256(layer).hexdigest()

config = json.dumps(
    {
        "architecture": "amd64",
        "os": "linux",
        "config": config_extra,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + layer_digest]},
    }
).encode()
config_digest = hashlib.sha256(config).hexdigest()
manifest = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + config_digest, "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": "sha256:" + layer_digest, "size": len(layer)}],
    }
).encode()
manifest_digest = hashlib.sha256(manifest).hexdigest()
index = {
    "schemaVersion": 2,
    "manifests": [
        {
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": "sha256:" + manifest_digest,
            "size": len(manifest),
            "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]},
        }
    ],
}

with tarfile.open(out, "w") as archive:

    def add(path, data):
        info = tarfile.TarInfo(path)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))

    add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    add("index.json", json.dumps(index).encode())
    for digest, blob in ((layer_digest, layer), (config_digest, config), (manifest_digest, manifest)):
        add("blobs/sha256/" + digest, blob)
