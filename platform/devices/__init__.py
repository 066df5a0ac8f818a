"""The device tier: devices train through Flower and their site aggregates them."""
