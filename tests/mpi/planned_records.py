"""Planned statistics of the distributed products' row exchanges, from the global matrices
in the virtual world (independent of the MPI run they are compared with): the rows of B
that A B fetches, and the partial rows of P^T (A P) each rank sends back, whose lengths
scipy counts structurally (|P_r|^T |A P|_r on rank r's rows)."""

import commsolve as cs


def spgemm_planned(G, Bg, row_dist, b_row_dist, topo, strategy):
    """Per rank, the planned CommStats of fetching B's rows for G B."""
    plans = cs.virtual.plans(G, row_dist, b_row_dist, strategy=strategy, topology=topo)
    lengths = [Bg[b_row_dist.owned(r)].getnnz(axis=1) for r in range(topo.size)]
    return cs.virtual.record_stats(plans, topo, lengths)


def galerkin_planned(G, Pg, dist, coarse, topo, strategy, rap_strategy=None):
    """Per rank, the planned CommStats of the two exchanges of P^T G P: (A P, P^T (A P)),
    the second with ``rap_strategy`` if given (``auto`` may choose differently for each)."""
    ap = spgemm_planned(G, Pg, dist, dist, topo, strategy)
    APg = abs(G) @ abs(Pg)
    patterns = cs.virtual.halo_patterns(Pg, dist, coarse)
    lengths = []
    for r in range(topo.size):
        rows = dist.owned(r)
        partial = abs(Pg[rows]).T.tocsr() @ APg[rows]
        lengths.append(partial.getnnz(axis=1)[patterns[r].halo_globals])
    plans = cs.virtual.plans(Pg, dist, coarse, strategy=rap_strategy or strategy, topology=topo)
    return ap, cs.virtual.record_stats(plans, topo, lengths, reverse=True)
