"""Matrix cases shared by the MPI scripts and the tests that read their results."""

GENERATORS = (
    "poisson2d:24",
    "poisson2d9:20",
    "poisson3d:8",
    "poisson3d27:7",
    "aniso2d:20,eps=0.01,theta=30",
    "random:rows=600,nnz_per_row=9,seed=3",
)
PARTITIONS = ("contiguous", "strided", "metis")
# Ways to build the distributed matrix: every rank generating its own rows, every rank
# cutting its rows from the same global matrix, or a parallel Matrix Market read.
SOURCES = ("spec", "global", "file")
STRATEGIES = ("node-aware", "node-aware-2step", "auto")

# Suite "construction": every generator x partition x source with the standard strategy,
# k = 1..4 ranks. Suite "strategies": node-aware strategies on every (k, ppn) with ppn | k.
CONSTRUCTION_RANKS = (1, 2, 3, 4)
STRATEGY_LAYOUTS = tuple((k, ppn) for k in (2, 4, 6, 8) for ppn in (1, 2, 3, 4) if k % ppn == 0)
STRATEGY_GENERATORS = ("poisson2d:24", "poisson3d27:7", "aniso2d:20,eps=0.01,theta=30",
                       "random:rows=600,nnz_per_row=9,seed=3")


def case_id(gen, part, source, strategy):
    return f"{gen}|{part}|{source}|{strategy}"


# Matrices where some or all ranks have nothing to send (built by the MPI script itself):
# the identity (nobody communicates) and an arrow (everyone needs the first rows only).
CUSTOM = ("custom-identity:96", "custom-arrow:96")


def suite(name):
    if name == "construction":
        return [(g, p, s, "standard") for g in GENERATORS for p in PARTITIONS for s in SOURCES]
    return ([(g, p, "spec", st) for g in STRATEGY_GENERATORS for p in PARTITIONS for st in STRATEGIES]
            + [(g, "contiguous", "global", st) for g in CUSTOM for st in STRATEGIES])


def construction_ppn(nranks):
    """Virtual ranks per node for the construction suite (real topology for 1 rank)."""
    return {1: None, 2: 1, 3: 1, 4: 2}[nranks]
