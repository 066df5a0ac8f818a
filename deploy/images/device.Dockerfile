# A device: Flower's own SuperNode (`flower-supernode`, flwr 1.41.0) with what the example
# app's ClientApp needs (CPU PyTorch, Fashion-MNIST), and nothing of Atoll. Elsewhere
# Flower's flwr/supernode image would do (with PyTorch added); where no image registry is
# reachable, deploy/images/build.sh builds this on its Debian-made Python image and
# installs from its folder of wheels (WHEELS), as it does Atoll's Dockerfile.
# The SuperNode gets the app's code from the site's SuperLink with each run.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG FLWR_VERSION=1.41.0
ARG WHEELS=
ARG FASHION_MNIST_VERSION=0.0~git20200523.55506a9-1
# The example reads Fashion-MNIST from /usr/share/datasets/fashion-mnist (its `data-dir`).
RUN apt-get update \
    && apt-get install -y --no-install-recommends "dataset-fashion-mnist=${FASHION_MNIST_VERSION}" \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/opt/venv/bin:$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# torch first and from its own index (left to the resolver it would be PyPI's CUDA build).
RUN python -m venv /opt/venv \
    && if [ -n "${WHEELS}" ]; then export PIP_NO_INDEX=1 PIP_FIND_LINKS="${WHEELS}"; fi \
    && pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}" \
    && pip install --no-cache-dir "flwr==${FLWR_VERSION}"
RUN useradd --system --uid 10002 --user-group --create-home --home-dir /home/device \
        --shell /usr/sbin/nologin device
USER device
WORKDIR /home/device
ENTRYPOINT ["flower-supernode"]
