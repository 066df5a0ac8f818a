"""The dashboard's pages and actions, and what they depend on."""
