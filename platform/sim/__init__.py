"""A virtual-time runtime: real training math, simulated compute and network time.

It drives the same geo policies as the real runtime, so one 2-core machine can
play eleven regions and predict what a deployment would see.
"""
