"""`edgerand` (``nodedp.methods.edgerand``): its registry entry; hyperparameters are the `gcn` twin's."""

from __future__ import annotations

from nodedp.contract.base import MethodInfo, lazy_run
from nodedp.contract.registry import register_method
from nodedp.contract.specs.gnn import GnnHparams

register_method(
    MethodInfo(
        name="edgerand",
        description="EdgeRand: randomized response on the adjacency (ε-edge-DP), then a GCN on the released graph",
        private=True,
        level="edge",
        hparams=GnnHparams,
        run=lazy_run("nodedp.methods.edgerand:run_edgerand"),
        plan="nodedp.plans.edgerand:plan_edgerand",
    )
)
