# One image for both components: the node agent (DaemonSet) and the descheduler (Deployment or
# CronJob); the manifests pass the subcommand as args. Build from the repository root:
#   docker build -t kubelet-companion:0.1.0 .
# (BuildKit, docker build's default since Docker 23, for RUN --mount below.)
#
# The base is pinned to a full patch tag, the CPython the test suite runs on, on Debian 12:
# a moving tag (python:3.11-slim) would change the interpreter and the libc under a rebuild
# without a commit saying so. To pin the bytes too, pass the digest your registry serves for
# that tag: --build-arg PYTHON_IMAGE=python:3.11.7-slim-bookworm@sha256:<digest>. Both stages
# use the same base, so the venv built in the first runs unchanged in the second.
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

# Stage 1: build this package's wheel, and fetch the wheels of its dependencies (the only
# network access, at build time).
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY agent ./agent
RUN python -m pip wheel --wheel-dir /wheels .

# Stage 2: the runtime. The package is installed from the wheel above with --no-index (its
# dependencies from the wheels beside it), the wheels are only bind-mounted for that step, and
# nothing here downloads anything: no pip from an index, no curl, no package manager.
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m venv /opt/kubelet-companion \
    && /opt/kubelet-companion/bin/pip install --no-index --no-cache-dir --find-links /wheels \
        /wheels/kubelet_companion-0.1.0-py3-none-any.whl
# Non-root by default (the distroless "nonroot" uid): the descheduler needs nothing more. The
# agent cannot be: it mounts a tmpfs to probe noswap support (SYS_ADMIN), takes a logind delay
# lock over the system bus (root is allowed without polkit), and writes the host's
# logind.conf.d drop-in and, when enforcing swap, cgroup files owned by root; its DaemonSet
# sets runAsUser: 0 with only SYS_ADMIN added and every other capability dropped.
USER 65532:65532
ENTRYPOINT ["/opt/kubelet-companion/bin/kubelet-companion"]
CMD ["--help"]
