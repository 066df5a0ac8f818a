"""Atoll's ServerApp: what a device site's SuperLink runs instead of the app's own.

The device app keeps its ClientApp; its `serverapp` component is pointed here (see
flower.site_app), and its run config names the site's spec file (`atoll-site`). The
ServerApp's own output stays inside Flower (`flwr log`), so it also writes the site's
log.jsonl and serverapp.log (with any traceback) next to the site's model.
"""

import logging
import time
import traceback
from pathlib import Path

import numpy as np
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import TrainingFailed, TrainingFinished
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
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(spec.out_dir / "serverapp.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("atoll", "atoll.devices"):
        logging.getLogger(name).addHandler(handler)
    logging.getLogger("atoll").setLevel(logging.INFO)
    with RunLog(spec.out_dir / "log.jsonl") as run_log:
        try:
            site = DeviceSite(spec, grid, initial_arrays(spec.model, spec.seed), run_log.write)
            final = site.run()
        except BaseException as e:
            logging.getLogger("atoll.devices").error("%s", traceback.format_exc())
            run_log.write(TrainingFailed(time=time.time(), message=f"{type(e).__name__}: {e}"))
            raise
        np.savez(spec.out_dir / "model.npz", **final)  # type: ignore[arg-type]
        run_log.write(TrainingFinished(time=time.time(), step=spec.rounds, stopped=False))
