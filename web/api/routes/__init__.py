"""One module per part of the dashboard."""
