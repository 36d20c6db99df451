"""The two container images the node needs, built offline from Debian's ``busybox-static``.

No registry is reachable (nor wanted) from a benchmark: the workload runs
``localhost/busybox:1.35`` (``imagePullPolicy: Never``) and each pod's sandbox is
``localhost/pause:busybox``, a busybox ``sleep`` for ever. Both are OCI image layouts in a
tar archive, as ``ctr images import`` reads them, sharing one layer: ``/bin/busybox``, one
symbolic link per applet, a minimal ``/etc/passwd`` and ``/etc/group``, and the empty
directories a container mounts over. Every timestamp is 0, so the same busybox binary makes
the same digests on every machine.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
WORKLOAD_IMAGE = "localhost/busybox:1.35"
SANDBOX_IMAGE = "localhost/pause:busybox"
FOREVER_SECONDS = "2147483647"
_DIRECTORIES = {"bin": 0o755, "dev": 0o755, "etc": 0o755, "proc": 0o755, "sys": 0o755}
_DIRECTORIES |= {"root": 0o700, "tmp": 0o1777, "usr": 0o755, "usr/bin": 0o755, "var": 0o755}
_FILES = {
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
    "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
}


@dataclass(frozen=True)
class Layer:
    tar: bytes
    """The uncompressed layer (its digest is the image config's ``diff_id``)."""
    gzipped: bytes


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _entry(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname, info.mtime = kind, mode, size, link, 0
    return info


def busybox_layer(busybox: Path = BUSYBOX) -> Layer:
    """The shared layer; reads the binary and asks it for its applets (an argument list)."""
    applets = subprocess.run(
        [str(busybox), "--list"], check=True, capture_output=True, text=True
    ).stdout.split()
    binary = busybox.read_bytes()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, mode in _DIRECTORIES.items():
            tar.addfile(_entry(name, tarfile.DIRTYPE, mode))
        tar.addfile(_entry("bin/busybox", tarfile.REGTYPE, 0o755, len(binary)), io.BytesIO(binary))
        for applet in sorted(set(applets) - {"busybox"}):
            tar.addfile(_entry(f"bin/{applet}", tarfile.SYMTYPE, 0o777, link="busybox"))
        for name, data in _FILES.items():
            tar.addfile(_entry(name, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return Layer(tar=raw.getvalue(), gzipped=packed.getvalue())


def _json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def image_archive(
    name: str, layer: Layer, *, entrypoint: list[str] | None, cmd: list[str] | None
) -> bytes:
    """An OCI image layout (``oci-layout``, ``index.json``, ``blobs/``) as a tar archive,
    with ``name`` as the image's ``io.containerd.image.name``."""
    config = _json(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                "Entrypoint": entrypoint,
                "Cmd": cmd,
                "WorkingDir": "/",
            },
            "rootfs": {"type": "layers", "diff_ids": [digest(layer.tar)]},
        }
    )
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": digest(config),
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": digest(layer.gzipped),
                    "size": len(layer.gzipped),
                }
            ],
        }
    )
    index = _json(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": digest(manifest),
                    "size": len(manifest),
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rpartition(":")[2],
                    },
                }
            ],
        }
    )
    files = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": index}
    files |= {f"blobs/sha256/{digest(b)[7:]}": b for b in (config, manifest, layer.gzipped)}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, data in files.items():
            tar.addfile(_entry(path, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    return out.getvalue()


def write_images(directory: Path) -> dict[str, Path]:
    """Both archives in ``directory``; image name -> archive."""
    directory.mkdir(parents=True, exist_ok=True)
    layer = busybox_layer()
    archives = {
        WORKLOAD_IMAGE: image_archive(WORKLOAD_IMAGE, layer, entrypoint=None, cmd=["sh"]),
        SANDBOX_IMAGE: image_archive(
            SANDBOX_IMAGE, layer, entrypoint=["/bin/sleep", FOREVER_SECONDS], cmd=None
        ),
    }
    written = {}
    for name, data in archives.items():
        path = directory / (name.rpartition("/")[2].replace(":", "-") + ".tar")
        path.write_bytes(data)
        written[name] = path
    return written
