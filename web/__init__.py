"""The dashboard: a backend-for-frontend service. It renders pages on the server and calls
the control plane and the registry itself (over HTTP, through their typed clients), so
the browser holds a session cookie and never a service token."""
