"""Coarse-grid aggregation's modes and their switches, as agglomeration stages
(:mod:`commsolve.amg.agglomerate`)."""

from __future__ import annotations

__all__ = ["CGA_MODES", "CGA_ROWS", "HCGA_ROWS", "HCGA_GROUP", "cga_stages"]

CGA_MODES = ("none", "flat", "hierarchical")
# CGA's switch: the first level with fewer rows per rank than this goes to one rank (a 64^3
# block per rank: the level with one cell per rank, where Nakajima's parallel levels end);
# hCGA's first move: fewer than HCGA_ROWS rows per rank (8 cells per rank there), onto one
# rank per group of HCGA_GROUP (the 16 cores of an FX10 node in flat MPI).
CGA_ROWS, HCGA_ROWS, HCGA_GROUP = 8, 64, 16


def cga_stages(mode, nranks, cga_rows=CGA_ROWS, hcga_rows=HCGA_ROWS, hcga_group=HCGA_GROUP):
    """The agglomeration stages (:mod:`commsolve.amg.agglomerate`) of a CGA mode on
    ``nranks`` ranks: none, flat ``[(cga_rows, 1)]``, hierarchical ``[(hcga_rows,
    ceil(P / hcga_group)), (cga_rows, 1)]`` (its first stage dropped when it would leave one
    rank: then it is CGA). The first stage's groups are ceil(P / its ranks) consecutive ranks:
    ``hcga_group`` when it divides P."""
    if mode not in CGA_MODES:
        raise ValueError(f"unknown coarse-grid aggregation '{mode}' (known: {', '.join(CGA_MODES)})")
    if not (cga_rows > 0 and hcga_rows > 0 and int(hcga_group) >= 2):
        raise ValueError(f"cga_rows and hcga_rows must be > 0 and hcga_group >= 2, got {cga_rows}, {hcga_rows}, "
                         f"{hcga_group}")
    if mode == "none" or nranks == 1:
        return []
    subset = -(-int(nranks) // int(hcga_group))
    if mode == "flat" or subset == 1:
        return [(float(cga_rows), 1)]
    return [(float(hcga_rows), subset), (float(cga_rows), 1)]
