"""The site tier: K workers and S parameter-server shards, BSP over torch.distributed.

Import what you use from its modules: this package imports nothing, so that a supervisor
(supervise.py, progress.py) loads without PyTorch.
"""
