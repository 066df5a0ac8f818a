"""Datasets that load offline, and partitioners that split them across sites."""
