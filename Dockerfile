# syntax=docker/dockerfile:1
#
# One image for every role: docker-compose.yml runs it as the registry
# (`atoll registry serve`), the control plane (`atoll control serve`) and the edge
# agents (`atoll edge run`). No secret is baked in: they all come from the environment.
#
# CPU PyTorch by default. For CUDA, point TORCH_INDEX_URL at a CUDA wheel index of the
# same torch release (the wheels carry the CUDA runtime; the host needs the NVIDIA driver
# and container toolkit):
#   docker build --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 -t atoll:cuda .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
# torch first, pinned and from its own index: left to the resolver, `pip install .` would
# fetch PyPI's CUDA build (gigabytes). Its own layer, so code changes do not refetch it.
RUN python -m venv /opt/venv \
    && pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}"
WORKDIR /src
# Only what the wheel is built from; keep in step with [tool.setuptools.package-dir].
COPY pyproject.toml README.md ./
COPY cli/ cli/
COPY platform/ platform/
COPY bench/ bench/
COPY registry/ registry/
COPY edge/ edge/
COPY localstack/ localstack/
RUN pip install --no-cache-dir . \
    && python -c "import torch; assert torch.__version__.startswith('${TORCH_VERSION}'), torch.__version__"

FROM ${PYTHON_IMAGE}
ARG FASHION_MNIST_VERSION=0.0~git20200523.55506a9-1
# Fashion-MNIST for the edge agents, under ATOLL_DATA_DIR's default /usr/share/datasets.
# A site with data of its own mounts it there, or elsewhere and sets ATOLL_DATA_DIR.
RUN apt-get update \
    && apt-get install -y --no-install-recommends "dataset-fashion-mnist=${FASHION_MNIST_VERSION}" \
    && rm -rf /var/lib/apt/lists/*
# A fixed uid, so that volumes and bind mounts can be given to it; the edge agent's state
# folder exists (owned by it) so that a fresh named volume mounted there inherits that.
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/atoll \
        --shell /usr/sbin/nologin atoll \
    && install -d -o atoll -g atoll /var/lib/atoll /var/lib/atoll/edge
COPY --from=build /opt/venv /opt/venv
COPY --chmod=0755 deploy/healthcheck.py /usr/local/bin/atoll-healthcheck
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER atoll
WORKDIR /home/atoll
# registry, control plane, an edge agent's geo links (GeoListen: `port` and the next `ports`-1)
EXPOSE 8700 8800 9400-9403
# Finds the role from the running command: /readyz for the two services, the heartbeat in
# Redis for an edge agent (deploy/healthcheck.py). The control plane imports PyTorch and
# migrates at start, hence the start period.
HEALTHCHECK --interval=15s --timeout=10s --start-period=60s --retries=3 \
    CMD ["atoll-healthcheck"]
ENTRYPOINT ["atoll"]
CMD ["--help"]
