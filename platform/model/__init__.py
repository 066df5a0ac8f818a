"""The model zoo: small models chosen by name."""

from atoll.platform.model.evaluate import Evaluation, evaluate
from atoll.platform.model.zoo import MODELS, build_model, model_signature

__all__ = ["MODELS", "Evaluation", "build_model", "evaluate", "model_signature"]
