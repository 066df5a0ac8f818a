"""The dashboard's settings, sessions and CSRF checks."""
