"""The geo tier: keeping the sites' model replicas approximately in sync over the WAN.

Everything here is sans-IO: policies take local steps, arriving messages and the
time as inputs and return decisions and messages to send. The simulator
(platform/sim) and the real runtime drive the same objects.
"""
