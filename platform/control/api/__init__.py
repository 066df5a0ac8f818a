"""The HTTP API: routes, and what they depend on."""
