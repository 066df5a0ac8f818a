"""The HTTP API: routes under /v1 and the dependencies they share."""
