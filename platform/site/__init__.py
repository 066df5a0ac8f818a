"""The site tier: K workers and S parameter-server shards, BSP over torch.distributed."""
