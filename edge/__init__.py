"""The edge agent: the daemon each site runs.

It registers the site with the registry (or reuses its token), heartbeats, takes jobs
from its command stream on the Redis bus, runs the site's part of each job as an
`atoll site run` process, reports class priors and accuracy to the registry, streams
telemetry from the site's log, and drains on SIGTERM. The decisions (which commands
were applied, what a site's exit means, a site's progress) are plain code without
I/O; the agent's threads are the I/O around them.
"""
