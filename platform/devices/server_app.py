"""Atoll's ServerApp: what a device site's SuperLink runs instead of the app's own.

The device app keeps its ClientApp; its `serverapp` component is pointed here (see
app_dir.py), and its run config names the site's spec file (`atoll-site`).
"""

import time
from pathlib import Path

import numpy as np
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import TrainingFinished
from atoll.platform.core.runlog import RunLog
from atoll.platform.devices.site import DeviceSite, initial_arrays
from atoll.platform.devices.spec import RUN_CONFIG_KEY, DeviceSiteSpec

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    path = str(context.run_config.get(RUN_CONFIG_KEY, ""))
    if not path:
        raise AtollError(f"run config has no '{RUN_CONFIG_KEY}': start the site with atoll")
    spec = DeviceSiteSpec.load(Path(path))
    with RunLog(spec.out_dir / "log.jsonl") as run_log:
        site = DeviceSite(spec, grid, initial_arrays(spec.model, spec.seed), run_log.write)
        final = site.run()
        np.savez(spec.out_dir / "model.npz", **final)  # type: ignore[arg-type]
        run_log.write(TrainingFinished(time=time.time(), step=spec.rounds, stopped=False))
