"""The structure stage's verbs: the artifacts a method trains on besides the graph (`bound-degree`: a
degree-bounded edge sample; `dp-appr`: DPAR's DP-APPR matrix with its ledger), and how `train` reads them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from nodedp.cli.common import (
    ACCOUNTANT_HELP,
    AddVerb,
    add_stage_timings_option,
    note,
    parse_delta,
    parse_epsilon,
    recorded_stages,
    target_delta,
)


def cmd_bound_degree(args: argparse.Namespace) -> None:
    from nodedp.data import degree_artifact, load_graph_tensors, load_split, remove_cross_split_edges
    from nodedp.io import torch_save_atomic

    graph = load_graph_tensors(Path(args.graph))  # no torch_geometric: seconds less per structure job
    num_nodes = graph["x"].size(0)
    split = load_split(Path(args.split), num_nodes=num_nodes)
    edges = graph["edge_index"]
    if split.setting == "inductive":
        edges = remove_cross_split_edges(edges, split)
    artifact = recorded_stages(
        args,
        lambda: degree_artifact(
            edges, kind=args.kind, bound=args.bound, seed=args.seed, num_nodes=num_nodes, train_nodes=split.train
        ),
    )
    torch_save_atomic(artifact, Path(args.out))
    # No count of the private graph: a log is an output a cluster shares, under the same rule as a run's metrics.
    print(
        f"{args.kind} ≤ {args.bound}: {args.out} written (how many edges it keeps is private; how far the graph is "
        "from its bounds: the dataset's stability report)"
    )


def add_bound_degree(verb: AddVerb) -> None:
    p = verb("bound-degree", cmd_bound_degree, "sample edges so every in- or out-degree is within a public bound")
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument("--split", required=True, help="stored split (.pt); in-degree bounding uses its training nodes")
    p.add_argument(
        "--kind",
        required=True,
        choices=["in-degree", "out-degree", "degree"],
        help="in-degree (DP-GNN), out-degree (GAP), or degree: undirected, both ends (NIP-GNN)",
    )
    p.add_argument("--bound", type=int, required=True, help="the public degree bound (K or D)")
    p.add_argument("--seed", type=int, required=True, help="seed of the edge sampling (the split's seed)")
    p.add_argument("--out", required=True, help="output .pt file")
    add_stage_timings_option(p, "of building the artifact (stage 'structure')")


def cmd_dp_appr(args: argparse.Namespace) -> None:
    from types import SimpleNamespace

    from nodedp.accounting import Ledger, write_ledger
    from nodedp.contract.base import RunSpec
    from nodedp.contract.registry import get_method
    from nodedp.contract.specs.dpar import OPTIONS
    from nodedp.data import load_graph_meta, load_graph_tensors, load_split
    from nodedp.io import torch_save_atomic
    from nodedp.methods.dpar import build_dp_appr
    from nodedp.plans import PublicInputs

    if args.method not in OPTIONS:
        raise ValueError(
            f"dp-appr builds DPAR's artifact; --method must be one of {list(OPTIONS)}, got {args.method!r}"
        )
    info = get_method(args.method)
    info.check_epsilon(args.epsilon)
    if args.hparams is not None:
        hparams = json.loads(args.hparams)
    else:  # the suite's tuned settings
        from nodedp.config.variants import resolve_method

        hparams = resolve_method({}, args.method)[1]
    hp = info.parse_hparams(hparams)
    graph_dir = Path(args.graph)
    meta = load_graph_meta(graph_dir)
    # The artifact needs the edges and sizes only: the checked tensors, without torch_geometric's import.
    tensors = load_graph_tensors(graph_dir)
    edges = tensors["edge_index"]
    graph = SimpleNamespace(edge_index=edges, num_nodes=tensors["x"].size(0), num_edges=edges.size(1))
    split = load_split(Path(args.split), num_nodes=graph.num_nodes)
    note(f"{meta['name']}: loaded; DP-APPR for {args.method} at ε = {args.epsilon:g}")
    # The plan reads the dataset's public metadata, never the graph's own counts (as PublicInputs.from_run).
    public = PublicInputs.of(meta, num_train=int(split.train.numel()), setting=split.setting)
    spec = RunSpec(
        dataset=meta["name"],
        method=args.method,
        seed=args.seed,
        target_epsilon=args.epsilon,
        target_delta=target_delta(info, meta, args.delta),
        accountant=info.resolve_accountant(args.accountant),
    )
    artifact = recorded_stages(
        args,
        lambda: build_dp_appr(graph, split, spec, hp, public=public),
    )
    out = Path(args.out)
    ledger = Ledger.from_dict(json.loads(artifact["ledger"]))
    # The ledger beside the artifact is for reading; training composes the copy inside the artifact.
    write_ledger(ledger, out.with_suffix(".ledger.json"))
    torch_save_atomic(artifact, out)
    spent = "non-private" if not ledger.private else f"ε = {ledger.composed()[0]:.4f} of {args.epsilon}"
    # No count of the private graph (its sources and sample sizes stay in the artifact): a log is a shared output.
    print(f"{args.method} DP-APPR: {out} written, APPR in {artifact['appr_seconds']:.2f} s; {spent}")


def add_dp_appr(verb: AddVerb) -> None:
    from nodedp.accounting import ACCOUNTANT_POLICIES

    p = verb("dp-appr", cmd_dp_appr, "build DPAR's DP-APPR matrix (a structure artifact, with its ledger beside it)")
    p.add_argument("--graph", required=True, help="canonical graph directory")
    p.add_argument(
        "--split", required=True, help="stored split (.pt); APPR runs on a node sample of its training nodes"
    )
    p.add_argument("--method", required=True, help="dpar-em0, dpar-em1, dpar-gm, dpar-features or dpar-nodp")
    p.add_argument(
        "--hparams",
        help="the method's hyperparameters as JSON, on top of its code defaults "
        "(default: the suite's tuned settings, nodedp/methods/tuned.yaml)",
    )
    p.add_argument(
        "--epsilon",
        type=parse_epsilon,
        required=True,
        help="the run's total target ε ('inf' for dpar-nodp); DP-APPR spends its `ratio` of it",
    )
    p.add_argument("--delta", type=parse_delta, default="auto", help="the run's target δ, or 'auto'")
    p.add_argument("--accountant", default="auto", choices=ACCOUNTANT_POLICIES, help=ACCOUNTANT_HELP)
    p.add_argument("--seed", type=int, required=True, help="the training seed that will use it")
    p.add_argument("--out", required=True, help="output .pt file (the ledger goes to <out>.ledger.json)")
    add_stage_timings_option(p, "of building the artifact (stage 'structure')")


def load_structure(paths: Sequence[str]) -> dict:
    """The structure artifacts at ``paths`` by kind, each checked to be one (a clear error names a bad file)."""
    import torch

    structure = {}
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"{path}: missing structure artifact")
        try:
            artifact = torch.load(path, weights_only=True)
        except Exception as err:  # a truncated file: torch raises many types, with long messages
            problem = (str(err).strip().splitlines() or [""])[0]
            raise ValueError(
                f"{path}: not a readable structure artifact ({type(err).__name__}: {problem}); "
                "rebuild it (`python -m nodedp bound-degree` or `dp-appr`)"
            ) from err
        if not isinstance(artifact, dict) or "kind" not in artifact:
            raise ValueError(
                f"{path}: not a structure artifact (no 'kind'); made by `python -m nodedp bound-degree` or `dp-appr`"
            )
        # degree bounds: {"kind", "bound", "seed", "edge_index"}; DPAR's: see nodedp.methods.dpar.build_dp_appr
        structure[artifact["kind"]] = artifact
    return structure


def check_structure(method: str, needs: Sequence[str], structure: dict) -> None:
    """Every artifact a method declares it needs, before any work: one line naming the kinds and their verbs."""
    missing = [kind for kind in needs if kind not in structure]
    if missing:
        made_by = ", ".join("`dp-appr`" if kind == "dp-appr" else f"`bound-degree --kind {kind}`" for kind in missing)
        raise ValueError(
            f"method {method!r} needs the structure artifact(s) {missing}: pass --structure with the "
            f"file(s) made by {made_by} (got {sorted(structure) or 'none'})"
        )
