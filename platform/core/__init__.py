"""What every part of Atoll shares: its settings and the error users see."""
