"""Every method's registry entry and hyperparameters, torch-free: one module per family, named as its
implementation (``nodedp.methods.<family>``), which imports its hyperparameters from here and is itself
imported only when a method runs (``nodedp.contract.base.LazyRun``). Every module of this package is imported
here (found, not listed): a new family's spec module registers itself. Planning (``snakemake -n``) and the
listing and checking verbs read the registry without torch, torch_geometric, dp_accounting or scipy.
"""

import importlib
import pkgutil

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    if not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")
