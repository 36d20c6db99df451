"""Run a command as if in a pod, in a private mount namespace: for upstream's Prometheus client.

Upstream's descheduler (v0.36) builds its Prometheus client only "in cluster" when the
policy's provider has no ``authToken``: ``rest.InClusterConfig`` must succeed (the
``KUBERNETES_SERVICE_HOST``/``PORT`` variables set, a token in
``/var/run/secrets/kubernetes.io/serviceaccount``) and the client loads that directory's
``ca.crt``. Outside a pod its client stays unset and every cycle fails. Its Kubernetes
client still comes from ``--kubeconfig``.

So ``wrap`` puts a command under ``unshare --mount --propagation private`` (with
``--map-root-user`` when not root) running this file, which, inside that namespace only,
mounts a tmpfs on the deepest existing directory above the service-account path (``/run``
on a host without ``/run/secrets``: the command then sees an empty ``/run``), creates the
path there, bind-mounts the stand-in directory (``stand_in``: a dummy token, the API
server's certificate as ``ca.crt``, ``namespace``) on it, sets the two variables and
``exec``s the command. Nothing outside that process tree sees any of it; and this file
refuses to mount anything unless its mount namespace differs from the one ``wrap`` was
called in (``--outside``).

Standard library only, run by path (``python incluster.py``): the command's working
directory is not the repository's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN = "livebench-stand-in-token"  # noqa: S105 - a dummy; nothing checks it
"""Upstream's Prometheus client sends it as a bearer token; the benchmark's Prometheus
checks none."""


def stand_in(directory: Path, ca_file: Path, namespace: str = "default") -> Path:
    """The service-account directory to mount: ``token``, ``ca.crt``, ``namespace``."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    (directory / "token").write_text(TOKEN, encoding="utf-8")
    shutil.copyfile(ca_file, directory / "ca.crt")
    (directory / "namespace").write_text(namespace, encoding="utf-8")
    return directory


def wrap(command: Sequence[str], *, stand_in_dir: Path, host: str, port: int) -> list[str]:
    """``command`` run in a private mount namespace with ``stand_in_dir`` mounted as the
    service-account directory and the in-cluster variables set."""
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        unshare.append("--map-root-user")
    return [
        *unshare,
        sys.executable,
        str(Path(__file__).resolve()),
        f"--stand-in={stand_in_dir}",
        f"--host={host}",
        f"--port={port}",
        f"--outside={mount_namespace()}",
        "--",
        *command,
    ]


def mount_namespace() -> str:
    """This process's mount namespace (``mnt:[inode]``); "" when it cannot be read."""
    try:
        return str(Path("/proc/self/ns/mnt").readlink())
    except OSError:
        return ""


def mount_point(target: Path) -> Path:
    """The deepest directory of ``target``'s resolved path that exists (the tmpfs goes
    there, so the rest of the path can be created without touching the host)."""
    path = target.resolve()
    while not path.exists():
        path = path.parent
    return path


def run_mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def make_dirs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


def main(
    argv: Sequence[str] | None = None,
    *,
    mount: Callable[..., None] = run_mount,
    make_dir: Callable[[Path], None] = make_dirs,
    namespace: Callable[[], str] = mount_namespace,
    execute: Callable[[str, list[str], dict[str, str]], object] = os.execvpe,
) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stand-in", type=Path, required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--outside", required=True, help="the caller's mount namespace")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args(argv)
    inside = namespace()
    if not inside or not args.outside or inside == args.outside:
        print(
            "incluster: not in a private mount namespace (run under unshare --mount); "
            "nothing mounted",
            file=sys.stderr,
        )
        return 2
    target = SERVICE_ACCOUNT.resolve()
    base = mount_point(target)
    if base == Path("/"):
        print(f"incluster: nothing of {target} exists but /; nothing mounted", file=sys.stderr)
        return 2
    if base != target:
        mount("-t", "tmpfs", "-o", "mode=0755", "livebench-incluster", str(base))
        make_dir(target)
    mount("--bind", str(args.stand_in), str(target))
    environment = {
        **os.environ,
        "KUBERNETES_SERVICE_HOST": args.host,
        "KUBERNETES_SERVICE_PORT": str(args.port),
    }
    execute(args.command[0], list(args.command), environment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
