"""Coarse-grid aggregation's modes and their switches, as agglomeration stages
(:mod:`commsolve.amg.agglomerate`)."""

from __future__ import annotations

__all__ = ["CGA_MODES", "CGA_ROWS", "HCGA_ROWS", "HCGA_GROUP", "check_switches", "hcga_leaders", "cga_stages", "placements",
           "placement_stages", "describe_placement"]

CGA_MODES = ("none", "flat", "hierarchical")
# CGA's switch: the first level with fewer rows per rank than this goes to one rank (a 64^3
# block per rank: the level with one cell per rank, where Nakajima's parallel levels end);
# hCGA's first move: fewer than HCGA_ROWS rows per rank (8 cells per rank there), onto one
# rank per group of HCGA_GROUP (the 16 cores of an FX10 node in flat MPI).
CGA_ROWS, HCGA_ROWS, HCGA_GROUP = 8, 64, 16


def check_switches(cga_rows=CGA_ROWS, hcga_rows=HCGA_ROWS, hcga_group=HCGA_GROUP):
    """Local. Checks coarse-grid aggregation's switches (every mode's, ``"auto"``'s too: it
    prices hCGA with those groups).

    Parameters
    ----------
    cga_rows, hcga_rows : float
        CGA's and hCGA's rows per rank.
    hcga_group : int
        hCGA's group of consecutive ranks.

    Raises
    ------
    ValueError
        Unless the rows per rank are > 0 and the hCGA groups hold 2 ranks or more (a whole
        number).
    """
    if not (cga_rows > 0 and hcga_rows > 0 and int(hcga_group) == hcga_group and hcga_group >= 2):
        raise ValueError(f"cga_rows and hcga_rows must be > 0 and hcga_group a whole number >= 2, got {cga_rows}, "
                         f"{hcga_rows}, {hcga_group}")


def hcga_leaders(nranks, hcga_group=HCGA_GROUP):
    """Local. hCGA's first move on ``nranks`` ranks.

    ``ceil(P / hcga_group)`` leaders, each receiving a group of ``ceil(P / leaders)``
    consecutive ranks (``hcga_group`` when it divides P), as
    :func:`commsolve.redistribute.agglomeration` groups them.

    Parameters
    ----------
    nranks : int
        The ranks P.
    hcga_group : int
        hCGA's group of consecutive ranks.

    Returns
    -------
    group : int
        Ranks per group.
    leaders : int
        The leaders.
    """
    leaders = -(-int(nranks) // int(hcga_group))
    return -(-int(nranks) // leaders), leaders


def cga_stages(mode, nranks, cga_rows=CGA_ROWS, hcga_rows=HCGA_ROWS, hcga_group=HCGA_GROUP):
    """Local. The agglomeration stages (:mod:`commsolve.amg.agglomerate`) of a CGA mode on
    ``nranks`` ranks.

    The first stage's groups are ``ceil(P / its ranks)`` consecutive ranks: ``hcga_group``
    when it divides P.

    Parameters
    ----------
    mode : {"none", "flat", "hierarchical"}
        The mode (:data:`CGA_MODES`).
    nranks : int
        The ranks P.
    cga_rows, hcga_rows : float
        CGA's and hCGA's rows per rank: the switches.
    hcga_group : int
        hCGA's group of consecutive ranks.

    Returns
    -------
    list of (float, int)
        none: ``[]`` (also on one rank); flat: ``[(cga_rows, 1)]``; hierarchical:
        ``[(hcga_rows, ceil(P / hcga_group)), (cga_rows, 1)]`` (its first stage dropped when
        it would leave one rank: then it is CGA).

    Raises
    ------
    ValueError
        For an unknown mode or bad switches (:func:`check_switches`).
    """
    if mode not in CGA_MODES:
        raise ValueError(f"unknown coarse-grid aggregation '{mode}' (known: {', '.join(CGA_MODES)})")
    check_switches(cga_rows, hcga_rows, hcga_group)
    if mode == "none" or nranks == 1:
        return []
    subset = hcga_leaders(nranks, hcga_group)[1]
    if mode == "flat" or subset == 1:
        return [(float(cga_rows), 1)]
    return [(float(hcga_rows), subset), (float(cga_rows), 1)]


def placements(on_all, on_one, to_one, allgather_all, leaders=None, on_leaders=None, to_leaders=None,
               leaders_to_one=None, allgather_leaders=0.0):
    """Local. Every placement of a hierarchy's coarse levels, priced per V-cycle from
    per-level seconds (index k: level k).

    Placements: ``none``; ``flat`` at level s (CGA); ``subset`` at s1 (onto the leaders,
    which keep the rest); ``hierarchical`` at s1 < s2 (hCGA). The coarsest level is never
    moved.

    Parameters
    ----------
    on_all : sequence of float
        Level k on every rank.
    on_one : sequence of float
        Level k on one rank.
    to_one : sequence of float
        Moving level k from every rank onto one and back.
    allgather_all : float
        The coarsest gathered whole on every rank.
    leaders : int, optional
        The ranks of an hCGA subset (None: no ``subset`` or ``hierarchical`` placement).
    on_leaders : sequence of float, optional
        With ``leaders``: level k on the leaders.
    to_leaders : sequence of float, optional
        With ``leaders``: moving level k from every rank onto the leaders and back.
    leaders_to_one : sequence of float, optional
        With ``leaders``: moving level k from the leaders onto one rank and back.
    allgather_leaders : float
        With ``leaders``: the coarsest gathered whole on every leader.

    Returns
    -------
    dict
        ``candidates`` (mode, levels, ranks, cycle_s), ``best`` (the cheapest of each mode)
        and ``chosen`` (the cheapest).
    """
    n = len(on_all)
    head = [float(sum(on_all[:s])) for s in range(n)]
    cands = [{"mode": "none", "levels": [], "ranks": [], "cycle_s": head[-1] + on_all[-1] + allgather_all}]
    cands += [{"mode": "flat", "levels": [s], "ranks": [1], "cycle_s": head[s] + to_one[s] + sum(on_one[s:])}
              for s in range(n - 1)]
    if leaders is not None:
        for s1 in range(n - 1):
            start = head[s1] + to_leaders[s1]
            cands.append({"mode": "subset", "levels": [s1], "ranks": [leaders],
                          "cycle_s": start + sum(on_leaders[s1:]) + allgather_leaders})
            cands += [{"mode": "hierarchical", "levels": [s1, s2], "ranks": [leaders, 1],
                       "cycle_s": start + sum(on_leaders[s1:s2]) + leaders_to_one[s2] + sum(on_one[s2:])}
                      for s2 in range(s1 + 1, n - 1)]
    for c in cands:
        c["cycle_s"] = float(c["cycle_s"])
    best = {}
    for c in cands:
        if c["mode"] not in best or c["cycle_s"] < best[c["mode"]]["cycle_s"]:
            best[c["mode"]] = c
    return {"candidates": cands, "best": best, "chosen": min(cands, key=lambda c: c["cycle_s"])}


def placement_stages(placement, rows, nranks):
    """Local. The agglomeration stages that put a hierarchy's levels where a placement says.

    Parameters
    ----------
    placement : dict
        A placement (:func:`placements`').
    rows : sequence of int
        Each level's rows (fewer on every coarser level, as coarsening makes them).
    nranks : int
        The ranks the hierarchy starts on.

    Returns
    -------
    list of (float, int)
        The stages (:mod:`commsolve.amg.agglomerate`).
    """
    stages = []
    for k, (s, m) in enumerate(zip(placement["levels"], placement["ranks"])):
        # the first level with fewer rows per rank than this is level s (rows decrease level by level); the
        # leaders of an earlier stage count their own ranks
        stages.append(((rows[s] + 0.5) / (nranks if k == 0 else placement["ranks"][k - 1]), m))
    return stages


def describe_placement(c):
    """Local. A priced placement in words.

    Parameters
    ----------
    c : dict
        A priced placement (:func:`placements`').

    Returns
    -------
    str
        ``"none"``, or the mode and each move: ``"flat (level 3 onto 1)"``.
    """
    if c["mode"] == "none":
        return "none"
    return c["mode"] + " (" + ", then ".join(f"level {s} onto {m}" for s, m in zip(c["levels"], c["ranks"])) + ")"
