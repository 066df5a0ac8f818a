"""The models of the zoo, by name: plain data, so that job specs and the command line can
name them without loading torch. `zoo.MODELS` has a builder for each."""

from typing import Literal, get_args

ModelName = Literal["cnn", "mlp", "logreg"]
MODEL_NAMES: tuple[str, ...] = get_args(ModelName)
