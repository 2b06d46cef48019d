"""Stand-ins of the papers' headline graphs: CSBM graphs of their size and shape, made offline.

``synthetic-arxiv``, ``synthetic-reddit`` and ``synthetic-products`` have the real graph's nodes, edges (in
expectation), features, classes, homophily and split proportions, with power-law degrees: for measuring **cost,
not accuracy**. ``standin_spec(shape, num_nodes=n)`` is the same shape at another size (what
``benchmarks/scaling.py`` grows). More: docs/design/data.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodedp.data.preprocess import Protocol, SplitProtocol, get_protocol, register_protocol
from nodedp.data.registry import csbm_dataset, register_dataset
from nodedp.data.synthetic import CSBMSpec

__all__ = ["SHAPES", "HeadlineShape", "standin_name", "standin_spec"]

# Power-law degree propensities (P(θ > t) ~ t^-1.5), capped at the structural cutoff √(N·d).
_DEGREE_EXPONENT = 2.5
_FEATURE_SIGNAL = 2.0


@dataclass(frozen=True)
class HeadlineShape:
    """A real graph's published shape. ``edges`` counts undirected pairs; ``split`` is the official
    (train, val, test) node counts; the degree bounds are the real dataset's in the registry."""

    graph: str
    nodes: int
    edges: int
    features: int
    classes: int
    homophily: float
    split: tuple[int, int, int]
    out_degree_bound: int
    in_degree_bound: int
    seed: int

    @property
    def mean_degree(self) -> float:
        return 2 * self.edges / self.nodes

    def fractions(self) -> tuple[float, float, float]:
        train, val, _ = (part / sum(self.split) for part in self.split)
        return train, val, 1.0 - train - val


SHAPES: dict[str, HeadlineShape] = {
    # OGB: 1,166,243 edges (citations, stored once), official split by year.
    "arxiv": HeadlineShape(
        "ogbn-arxiv",
        169_343,
        1_166_243,
        128,
        40,
        0.655,
        (90_941, 29_799, 48_603),
        out_degree_bound=50,
        in_degree_bound=10,
        seed=11,
    ),
    # PyG/DGL store 114,615,892 columns: 57,307,946 undirected pairs, mean degree 492.
    "reddit": HeadlineShape(
        "Reddit",
        232_965,
        57_307_946,
        602,
        41,
        0.756,
        (153_431, 23_831, 55_703),
        out_degree_bound=400,
        in_degree_bound=10,
        seed=12,
    ),
    # OGB: 61,859,140 edges (stored once), official split by sales rank.
    "products": HeadlineShape(
        "ogbn-products",
        2_449_029,
        61_859_140,
        100,
        47,
        0.808,
        (196_615, 39_323, 2_213_091),
        out_degree_bound=50,
        in_degree_bound=10,
        seed=13,
    ),
}


def standin_name(shape: str) -> str:
    return f"synthetic-{shape}"


def _shape(shape: str) -> HeadlineShape:
    try:
        return SHAPES[shape]
    except KeyError:
        raise ValueError(f"unknown headline shape {shape!r}; valid choices: {sorted(SHAPES)}") from None


def standin_spec(shape: str, *, num_nodes: int | None = None, seed: int | None = None) -> CSBMSpec:
    """The CSBM spec of ``shape``'s stand-in, at its real size or at ``num_nodes`` with the same mean degree."""
    s = _shape(shape)
    nodes = s.nodes if num_nodes is None else num_nodes
    return CSBMSpec(
        num_nodes=nodes,
        num_classes=s.classes,
        avg_degree=s.mean_degree,
        homophily=s.homophily,
        num_features=s.features,
        feature_signal=_FEATURE_SIGNAL,
        degree_exponent=_DEGREE_EXPONENT,
        class_weights=None,
        seed=s.seed if seed is None else seed,
    )


def standin_protocol(shape: str) -> Protocol:
    """A random transductive split in the official split's proportions (the real one is by time or rank)."""
    s = _shape(shape)
    train, val, test = s.fractions()
    return Protocol(
        name=f"stand-in-{shape}",
        description=(
            f"Stand-in of {s.graph}: generated undirected without self-loops (the cleaning steps are "
            f"no-ops); random {train:.1%}/{val:.1%}/{test:.1%} transductive split, the official split's "
            "proportions"
        ),
        steps=get_protocol("planetoid").steps,
        split=SplitProtocol(kind="random", setting="transductive", train=train, val=val, test=test),
    )


for _shape_name, _s in SHAPES.items():
    register_protocol(standin_protocol(_shape_name))
    register_dataset(
        csbm_dataset(
            standin_name(_shape_name),
            standin_spec(_shape_name),
            description=(
                f"stand-in of {_s.graph} for cost, not accuracy: CSBM, {_s.nodes:,} nodes, ~{_s.edges:,} "
                f"edges, {_s.features} features, {_s.classes} classes, power-law degrees"
            ),
            out_degree_bound=_s.out_degree_bound,
            in_degree_bound=_s.in_degree_bound,
            protocol=f"stand-in-{_shape_name}",
        )
    )
