# Redis from Debian's packages (7.0 in bookworm), for docker-compose.yml's `redis` service on
# a host that reaches no image registry (REDIS_IMAGE; redis:7.4-bookworm elsewhere).
# deploy/images/build.sh builds it on the Debian image it makes with debootstrap.
#
# What the compose file relies on, as with the official image: `redis-server` and
# `redis-cli` on the PATH; the password comes from the command (`--requirepass`) and, for
# redis-cli, from REDISCLI_AUTH.
ARG DEBIAN_IMAGE=localhost/atoll-base/debian:bookworm
FROM ${DEBIAN_IMAGE}
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* \
    && install -d -o redis -g redis /data
USER redis
WORKDIR /data
EXPOSE 6379
# A container's port is reached from other containers: the official image also turns off
# protected mode, which would refuse them while no password is set.
CMD ["redis-server", "--protected-mode", "no"]
