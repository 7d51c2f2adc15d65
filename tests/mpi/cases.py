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
RANKS = (1, 2, 3, 4)


def case_id(gen, part, source):
    return f"{gen}|{part}|{source}"


def all_cases():
    return [(g, p, s) for g in GENERATORS for p in PARTITIONS for s in SOURCES]


def ppn_for(nranks):
    """Virtual ranks per node used for a world size (real topology for 1 rank)."""
    return {1: None, 2: 1, 3: 1, 4: 2}[nranks]
