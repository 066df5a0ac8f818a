# syntax=docker/dockerfile:1
#
# One image for every role: docker-compose.yml runs it as the registry
# (`atoll registry serve`), the control plane (`atoll control serve`) and the edge
# agents (`atoll edge run`). No secret is baked in: they all come from the environment.
#
# PyTorch's CPU build: Atoll trains on the CPU (no code moves a tensor to a GPU).
#
# Where no registry or package index is reachable (CI here), deploy/images/build.sh builds
# this file with podman on base images of its own (PYTHON_IMAGE) and installs every Python
# package from a folder of wheels (WHEELS).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# The dependencies that pyproject.toml lists, alone in a file: the layer that installs them
# is then reused until they change, whatever else in pyproject.toml or the code does.
FROM ${PYTHON_IMAGE} AS requirements
WORKDIR /src
COPY pyproject.toml ./
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" \
    > requirements.txt

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# A folder of wheels to install from instead of the indexes (empty: PyPI and
# TORCH_INDEX_URL). It must be in the build's filesystem, e.g. bind-mounted by
# `podman build --volume DIR:/wheels:ro --build-arg WHEELS=/wheels`.
ARG WHEELS=
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
# torch first, pinned and from its own index: left to the resolver, the dependencies would
# fetch PyPI's CUDA build (gigabytes). Its own layer, so that nothing else refetches it.
# With WHEELS, pip's PIP_NO_INDEX and PIP_FIND_LINKS turn every index off.
RUN python -m venv /opt/venv \
    && if [ -n "${WHEELS}" ]; then export PIP_NO_INDEX=1 PIP_FIND_LINKS="${WHEELS}"; fi \
    && pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}"
COPY --from=requirements /src/requirements.txt /tmp/requirements.txt
RUN if [ -n "${WHEELS}" ]; then export PIP_NO_INDEX=1 PIP_FIND_LINKS="${WHEELS}"; fi \
    && pip install --no-cache-dir -r /tmp/requirements.txt \
    && python -c "import torch; assert torch.__version__.startswith('${TORCH_VERSION}'), torch.__version__"
WORKDIR /src
# Only what the wheel is built from; keep in step with [tool.setuptools.package-dir].
COPY pyproject.toml README.md ./
COPY cli/ cli/
COPY platform/ platform/
COPY bench/ bench/
COPY registry/ registry/
COPY edge/ edge/
COPY localstack/ localstack/
COPY web/ web/
# Atoll itself as a wheel, installed in the image's last layers: a change of code rebuilds
# only those, not the gigabyte of dependencies.
RUN if [ -n "${WHEELS}" ]; then export PIP_NO_INDEX=1 PIP_FIND_LINKS="${WHEELS}"; fi \
    && pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

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
    && install -d -o atoll -g atoll /var/lib/atoll /var/lib/atoll/edge /var/lib/atoll/ca \
        /etc/atoll /etc/atoll/tls /etc/atoll/public
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
COPY --from=build /opt/venv /opt/venv
COPY --from=build /dist /tmp/dist
RUN pip install --no-cache-dir --disable-pip-version-check --no-deps --no-index /tmp/dist/atoll-*.whl \
    && rm -rf /tmp/dist
COPY --chmod=0755 deploy/healthcheck.py /usr/local/bin/atoll-healthcheck
# The device tier's example Flower app: what `deploy/compose.devices.yml` runs.
COPY examples/fashion-mnist-flower /opt/atoll/examples/fashion-mnist-flower
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
