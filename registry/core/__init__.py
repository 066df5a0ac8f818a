"""What every part of the registry service shares: settings, auth, errors, limits, metrics."""
