"""The edge agent: the daemon each site runs.

It registers the site with the registry (or reuses its token), heartbeats, takes jobs
from its command stream on the Redis bus, runs the site's part of each job as an
`atoll site run` process, reports class priors and accuracy to the registry, streams
telemetry from the site's log, and drains on SIGTERM. Its decisions are a core without
I/O (core.py: commands, site exits, recovery, signals, telemetry throttling), which
uses the site supervisor's restart policy and progress fold (platform/site); the
agent's loop and threads are the I/O around it.
"""
