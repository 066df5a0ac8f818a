# Python 3.11 from Debian's packages: what Atoll's Dockerfile needs of its base image
# (python:3.11-slim-bookworm elsewhere) on a host that reaches no image registry.
# deploy/images/build.sh builds it on the Debian image it makes with debootstrap.
ARG DEBIAN_IMAGE=localhost/atoll-base/debian:bookworm
FROM ${DEBIAN_IMAGE}
# `python` (python-is-python3) and `python -m venv` (python3-venv), as in the official image;
# apt stays usable for the final stage's own packages. Bookworm's current versions: the
# image is rebuilt when its files change, not pinned package by package.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates python-is-python3 python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
CMD ["python"]
