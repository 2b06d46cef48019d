"""Methods: one implementation module per family; their registry entries and hyperparameters live in
``nodedp.methods.specs`` (torch-free), and each implementation is imported when its method runs."""

from nodedp.methods import specs  # noqa: F401  (registration)
from nodedp.methods.base import MethodInfo, RunInputs, RunResult, RunSpec
from nodedp.methods.registry import (
    UnknownMethodError,
    get_method,
    method_names,
    register_method,
)

__all__ = [
    "MethodInfo",
    "RunInputs",
    "RunResult",
    "RunSpec",
    "UnknownMethodError",
    "get_method",
    "method_names",
    "register_method",
]
