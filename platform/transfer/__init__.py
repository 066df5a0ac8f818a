"""Cartel collaborative transfer between per-site models (Daga et al., SoCC 2019).

`core` is the sans-IO state machine a site runs (report, detect drift, ask for
neighbours, fetch a part, merge, record lineage); `sim` drives it in virtual time,
the edge agent's cartel job drives it for real.
"""
