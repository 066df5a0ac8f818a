"""The local stack for development: a whole deployment (Redis, registry, control plane,
edge agents) and throwaway registries as processes on this machine. `atoll demo`, the
integration tests and the benchmarks start it; no shipped service imports it."""
