"""A cartel site, as its edge agent runs it (`atoll site run` on a cartel site job).

`site.py` drives the sans-IO core (platform/transfer/core.py) for real: it trains the
site's own model on its stream, fetches parts from neighbours over the job's
authenticated site-to-site links (platform/net) and serves its own; `registry.py`
talks to the registry in a thread of its own, so a registry that is down never holds
training up.
"""
