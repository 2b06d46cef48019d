"""Every method's registry entry and hyperparameters, torch-free: one module per family, named as its
implementation (``nodedp.methods.<family>``), which imports its hyperparameters from here and is itself
imported only when a method runs (``nodedp.methods.base.LazyRun``). Planning (``snakemake -n``) and the
listing and checking verbs read the registry without torch, torch_geometric, dp_accounting or scipy.
"""

from nodedp.methods.specs import (  # noqa: F401  (registration)
    aggregation_perturbation,
    dp_gnn,
    dpar,
    dpdgc,
    edgerand,
    gap,
    gnn,
    mlp,
    nip_gnn,
    progap,
)
