"""Topology: rank -> node maps, real or virtual (topology is explicit: a rank's node comes from
the MPI library, or from a virtual ranks-per-node setting, so node-aware strategies run and are
tested on one machine)."""

from __future__ import annotations

from ._core import Topology

__all__ = ["Topology", "make_topology", "blocked_topology"]


def blocked_topology(size, ppn):
    """``size`` virtual ranks on nodes of ``ppn`` consecutive ranks, the last node partly
    filled when ``ppn`` does not divide ``size`` (unlike ``make_topology(size=, ppn=)``).

    Parameters
    ----------
    size : int
        Number of ranks.
    ppn : int
        Ranks per node (the last node may have fewer).

    Returns
    -------
    Topology
    """
    return make_topology(nodes=[r // int(ppn) for r in range(int(size))], size=int(size))


def make_topology(comm=None, ppn=None, layout="smp", nodes=None, size=None):
    """Build a Topology (collective only when it reads ``comm``'s real node layout).

    Parameters
    ----------
    comm : mpi4py communicator, optional
        With neither ``ppn`` nor ``nodes``: the real node layout of ``comm``
        (MPI_Comm_split_type SHARED; collective).
    ppn : int, optional
        Virtual processes per node (must divide the world size), laid out by ``layout``
        (``"smp"`` blocks or ``"round-robin"``).
    layout : {"smp", "round-robin"}, default "smp"
        How ``ppn`` places the ranks: ``"smp"``, blocks of ``ppn`` consecutive ranks per
        node; ``"round-robin"``, rank r on node r mod (number of nodes).
    nodes : sequence of int, optional
        Explicit node id of every rank.
    size : int, optional
        World size when there is no communicator (virtual world).

    Returns
    -------
    Topology

    Raises
    ------
    ValueError
        When ``size`` differs from ``comm``'s size, ``nodes`` has another length than the
        world size, ``ppn`` comes without a world size, nothing says the layout, or
        ``ppn`` or ``layout`` does not fit (a ``ppn`` that does not divide the world size,
        an unknown ``layout``).

    Examples
    --------
    >>> make_topology(size=8, ppn=4).num_nodes
    2
    """
    if comm is not None:
        if size is not None and size != comm.size:
            raise ValueError(f"size {size} differs from the communicator's size {comm.size}")
        size = comm.size
    if nodes is not None:
        nodes = [int(v) for v in nodes]
        if size is not None and len(nodes) != size:
            raise ValueError(f"rank -> node list has {len(nodes)} entries for {size} ranks")
        return Topology.from_node_list(nodes)
    if ppn is not None:
        if size is None:
            raise ValueError("a virtual ppn needs the world size (size=) or a communicator")
        return Topology.regular(int(size), int(ppn), layout)
    if comm is None:
        raise ValueError("give a communicator, a ppn with size, or a node list")
    return Topology._from_comm(comm.py2f())
