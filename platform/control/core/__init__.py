"""Settings and metrics of the control plane service."""
