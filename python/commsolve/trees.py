"""Restricted collectives on asynchronous point-to-point (PSelInv paper, section III).

A broadcast or a sum-reduction among any subset of ranks, many in flight at once, without
sub-communicators or MPI collectives. What moves is a list of collectives
(:class:`Collectives`); how it moves is a tree shape:

==================  ======================================================================
``flat``            the root sends to / receives from every participant
``binary``          the sorted participant list halved recursively, the first rank of each
                    half an internal node
``shifted-binary``  the receiver list circularly shifted at a position derived from
                    (seed, collective id), so every rank builds the same tree alone
``need-ordered``    receivers in the order given (who needs the data first), then binary
``node-aware``      between one leader per node, then inside each node
``auto``            flat up to ``flat_threshold`` participants, shifted-binary above
==================  ======================================================================

Example (under ``mpiexec -n 4 python -m mpi4py``)::

    C = trees.Collectives.from_list([(0, "broadcast", 2, [0, 1, 2, 3], 5)])
    plan = trees.plan(C, comm.rank, topo, shape="binary")
    data = [np.arange(5.0) if comm.rank == 2 else np.zeros(5)]
    trees.run(comm, C, plan, data, topo)   # every participant now holds 0..4
"""

from __future__ import annotations

import numpy as np

from . import _core
from ._watchdog import watched
from .stats import CommStats

__all__ = ["Collectives", "SHAPES", "TreeShape", "tree_shape", "check_shape", "plan", "plans", "stats", "virtual_stats",
           "run", "random_collectives", "volume_summary", "price", "choose_threshold"]

KINDS = {"broadcast": 0, "reduce": 1}
SHAPES = tuple(_core.tree_shape_names())
TreeShape = _core.TreeShape  # name, seed, flat_threshold; unset parts take C++'s defaults


class Collectives:
    """Restricted collectives: per collective an id, a kind (``"broadcast"`` or
    ``"reduce"``), a root, its participants (root included; their order is the "need" order
    for need-ordered trees) and the number of doubles carried.

    Parameters
    ----------
    ids : sequence of int
        One id per collective.
    kinds : sequence of str or int
        ``"broadcast"`` (0) or ``"reduce"`` (1) per collective.
    roots : sequence of int
        The root rank of each.
    participants : sequence of sequence of int
        The ranks of each, root included.
    counts : sequence of int
        The doubles each carries.

    Raises
    ------
    ValueError
        For a kind other than broadcast or reduce.
    """

    def __init__(self, ids, kinds, roots, participants, counts):
        def kind_code(k):
            code = KINDS.get(k, -1) if isinstance(k, str) else int(k)
            if code not in (0, 1):
                raise ValueError(f"collective kind must be 'broadcast' or 'reduce', got {k!r}")
            return code

        kinds = [kind_code(k) for k in kinds]
        lens = [len(p) for p in participants]
        self.core = _core.CollectiveSet(
            np.asarray(ids, np.int64), np.asarray(kinds, np.int8), np.asarray(roots, np.int32),
            np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
            np.concatenate([np.asarray(p, np.int32) for p in participants]) if participants else np.zeros(0, np.int32),
            np.asarray(counts, np.int64))
        self.ids, self.kinds, self.roots = list(ids), kinds, list(roots)
        self.participants = [list(map(int, p)) for p in participants]
        self.counts = [int(c) for c in counts]

    @classmethod
    def from_core(cls, core):
        """Wrap a core CollectiveSet (e.g. one built in C++ from a factor's layout).

        Parameters
        ----------
        core : CollectiveSet
            The C++ set (``commsolve._core.CollectiveSet``), kept as it is.

        Returns
        -------
        Collectives
        """
        self = cls.__new__(cls)
        self.core = core
        ptr, part = core.part_ptr, core.part
        self.ids, self.kinds, self.roots = core.id.tolist(), core.kind.tolist(), core.root.tolist()
        self.participants = [part[ptr[c]:ptr[c + 1]].tolist() for c in range(len(core))]
        self.counts = core.count.tolist()
        return self

    @classmethod
    def from_list(cls, records):
        """From ``(id, kind, root, participants, count)`` tuples.

        Parameters
        ----------
        records : sequence of tuple
            One ``(id, kind, root, participants, count)`` per collective (kinds as
            :class:`Collectives` takes them).

        Returns
        -------
        Collectives
        """
        cols = list(zip(*records)) if records else [[], [], [], [], []]
        return cls(*cols)

    def __len__(self):
        return len(self.ids)


def tree_shape(shape=None, seed=None, flat_threshold=None):
    """A :class:`TreeShape`: ``shape`` itself if it is one, else the shape named ``shape``
    with ``seed`` and ``flat_threshold``; what is None takes C++'s default (binary, 0, 8).

    Parameters
    ----------
    shape : str, TreeShape or None
        A name of :data:`SHAPES`, or a TreeShape (returned as it is, ``seed`` and
        ``flat_threshold`` ignored).
    seed : int, optional
        The seed of the shifted-binary shape's shifts.
    flat_threshold : int, optional
        The ``auto`` shape's largest flat collective (participants).

    Returns
    -------
    TreeShape

    Raises
    ------
    ValueError
        Naming the known shapes (the core's rule, ``check_tree_shape``), for an unknown name
        or something that is neither a name nor a TreeShape.

    Examples
    --------
    >>> from commsolve import trees
    >>> trees.tree_shape()
    TreeShape('binary', seed=0, flat_threshold=8)
    >>> trees.tree_shape("auto", flat_threshold=4)
    TreeShape('auto', seed=0, flat_threshold=4)
    """
    if isinstance(shape, TreeShape):
        return shape
    if shape is not None and not isinstance(shape, str):
        raise ValueError(f"a tree shape is a name (known: {', '.join(SHAPES)}), got {shape!r}")
    return TreeShape(shape, None if seed is None else int(seed), None if flat_threshold is None else int(flat_threshold))


def check_shape(shape):
    """``shape`` if it names a tree shape, else a ValueError listing them (the core's rule).

    Parameters
    ----------
    shape : str or None
        The name (None passes: the default shape).

    Returns
    -------
    str or None
        ``shape``.

    Raises
    ------
    ValueError
        Listing the known shapes.
    """
    tree_shape(shape)
    return shape


def _validated(collectives, topology, shape, seed, flat_threshold):
    tree = tree_shape(shape, seed, flat_threshold)
    collectives.core.validate(topology.size)
    return tree


def plans(collectives, topology, shape=None, seed=None, flat_threshold=None):
    """Every rank's TreePlan (virtual world, no MPI).

    Parameters
    ----------
    collectives : Collectives
        What moves.
    topology : Topology
        The ranks and their nodes.
    shape, seed, flat_threshold
        The tree shape, as :func:`tree_shape` takes them.

    Returns
    -------
    list of TreePlan
        Indexed by rank.

    Raises
    ------
    ValueError
        When a collective names a rank outside the topology, or for an unknown shape.
    """
    tree = _validated(collectives, topology, shape, seed, flat_threshold)
    return _core.build_tree_plans_virtual(collectives.core, tree, topology)


def plan(collectives, rank, topology, shape=None, seed=None, flat_threshold=None):
    """Local. This rank's TreePlan, built alone (no communication).

    Parameters
    ----------
    collectives : Collectives
        What moves, the same on every rank.
    rank : int
        The rank whose plan is built.
    topology : Topology
        The ranks and their nodes.
    shape, seed, flat_threshold
        The tree shape, as :func:`tree_shape` takes them (the same on every rank).

    Returns
    -------
    TreePlan
        The rank's parent and children in every collective it takes part in.

    Raises
    ------
    ValueError
        When a collective names a rank outside the topology, or for an unknown shape.
    """
    tree = _validated(collectives, topology, shape, seed, flat_threshold)
    return _core.build_tree_plan(collectives.core, rank, tree, topology)


def virtual_stats(collectives, topology, shape=None, seed=None, flat_threshold=None):
    """Every rank's planned CommStats, computed without keeping the plans (for large sets).

    Parameters
    ----------
    collectives : Collectives
        What moves.
    topology : Topology
        The ranks and their nodes.
    shape, seed, flat_threshold
        The tree shape, as :func:`tree_shape` takes them.

    Returns
    -------
    list of CommStats
        One per rank: step 0 broadcasts, step 1 reductions.

    Raises
    ------
    ValueError
        When a collective names a rank outside the topology, or for an unknown shape.
    """
    tree = _validated(collectives, topology, shape, seed, flat_threshold)
    arr = _core.tree_stats_virtual(collectives.core, tree, topology)
    return [CommStats(a) for a in arr]


def stats(plan_list, collectives, topology):
    """Planned CommStats of every plan: step 0 broadcasts, step 1 reductions.

    Parameters
    ----------
    plan_list : sequence of TreePlan
        The plans (:func:`plans`, or some ranks' :func:`plan`).
    collectives : Collectives
        What they move.
    topology : Topology
        The ranks and their nodes.

    Returns
    -------
    list of CommStats
        One per plan.
    """
    return [CommStats(p.stats_array(collectives.core, topology)) for p in plan_list]


@watched("trees.run")
def run(comm, collectives, tree_plan, data, topology, max_posted=64):
    """Collective on ``comm``. Runs every collective of ``tree_plan`` once, updating ``data`` in
    place.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator; its ranks are the collectives' ranks.
    collectives : Collectives
        What moves, the same on every rank.
    tree_plan : TreePlan
        This rank's plan (:func:`plan`).
    data : list of ndarray
        One float64 array per entry of ``tree_plan.index``, of that collective's count:
        ``data[i]`` is a broadcast root's input or a receiver's output, a reduction
        participant's contribution and, at the root, the sum.
    topology : Topology
        The ranks and their nodes, as planned.
    max_posted : int
        The most receives posted ahead at a time (0: none, each message probed and received
        at its own size).

    Returns
    -------
    CommStats
        What this rank recorded.

    Raises
    ------
    ValueError
        When ``data`` does not hold one array of the right length per collective of the plan.
    """
    sizes = [collectives.counts[c] for c in tree_plan.index]
    if len(data) != len(sizes) or any(np.shape(d) != (n,) for d, n in zip(data, sizes)):
        raise ValueError(f"data must hold {len(sizes)} arrays of lengths {sizes} (the plan's collectives)")
    flat = np.concatenate([np.asarray(d, np.float64) for d in data]) if data else np.zeros(0)
    rec = _core.run_collectives(collectives.core, tree_plan, flat, topology, comm.py2f(), max_posted)
    off = 0
    for d, n in zip(data, sizes):
        d[...] = flat[off: off + n]
        off += n
    return CommStats(rec)


def random_collectives(nranks, n, seed=0, max_count=40):
    """``n`` random overlapping collectives over ``nranks`` ranks (random kinds, roots,
    subsets from 1 rank to all, payloads from 0 values), reproducible from ``seed``.

    Parameters
    ----------
    nranks : int
        The ranks to choose from.
    n : int
        The number of collectives (ids 0 .. n - 1).
    seed : int
        The random generator's seed.
    max_count : int
        The largest payload (doubles).

    Returns
    -------
    Collectives
    """
    rng = np.random.default_rng(seed)
    records = []
    for c in range(n):
        size = int(rng.integers(1, nranks + 1))
        part = rng.permutation(nranks)[:size]
        count = 0 if rng.random() < 0.1 else int(rng.integers(1, max_count + 1))
        records.append((c, "broadcast" if rng.random() < 0.5 else "reduce", int(rng.choice(part)), part, count))
    return Collectives.from_list(records)


def volume_summary(per_rank_stats):
    """The PSelInv paper's Table I and II: min, max, median and standard deviation over
    ranks of the bytes each rank sends in broadcasts and receives in reductions, plus the
    busiest rank's message counts.

    Parameters
    ----------
    per_rank_stats : sequence of CommStats
        One per rank, step 0 broadcasts and step 1 reductions (:func:`stats`,
        :func:`virtual_stats` or :func:`run`'s).

    Returns
    -------
    dict
        ``"broadcast_sent"`` and ``"reduce_received"``, each a dict of ``min_bytes``,
        ``max_bytes``, ``median_bytes``, ``std_bytes``, ``max_messages`` and
        ``per_rank_bytes`` (an array); ``"inter_node_bytes_max"``, the most bytes a rank sent
        off its node.
    """
    arr = np.array([s.array for s in per_rank_stats], dtype=float)  # (ranks, 2, 8)
    out = {}
    for name, vol, msgs in (("broadcast_sent", arr[:, 0, 2] + arr[:, 0, 3], arr[:, 0, 0] + arr[:, 0, 1]),
                            ("reduce_received", arr[:, 1, 6] + arr[:, 1, 7], arr[:, 1, 4] + arr[:, 1, 5])):
        out[name] = {"min_bytes": float(vol.min()), "max_bytes": float(vol.max()), "median_bytes": float(np.median(vol)),
                     "std_bytes": float(vol.std()), "max_messages": int(msgs.max()), "per_rank_bytes": vol}
    out["inter_node_bytes_max"] = float((arr[:, :, 3]).sum(axis=1).max())
    return out


def price(plan_list, collectives, topology, profile):
    """Predicted time of running the collectives once with these plans, by the cost model
    of ``profile`` (broadcasts and reductions priced as two steps of messages).

    Parameters
    ----------
    plan_list : sequence of TreePlan
        Every rank's plan (:func:`plans`).
    collectives : Collectives
        What they move.
    topology : Topology
        The ranks and their nodes.
    profile : MachineProfile, str or path
        The machine profile (an object, a bundled name or a TOML path).

    Returns
    -------
    Prediction
        :class:`commsolve.model.Prediction`; ``.time`` is the predicted seconds.
    """
    from .model import CostModel

    rank, step, peer, nbytes = [], [], [], []
    nrecv = np.zeros((topology.size, 2))
    for p in plan_list:
        parents = p.parents
        for i, c in enumerate(p.index):
            kind, size = collectives.kinds[c], 8.0 * (1 + collectives.counts[c])
            children = p.children(i)
            sends = children if kind == 0 else ([int(parents[i])] if parents[i] >= 0 else [])
            nrecv[p.rank, kind] += (1 if parents[i] >= 0 else 0) if kind == 0 else len(children)
            rank += [p.rank] * len(sends)
            step += [kind] * len(sends)
            peer += list(sends)
            nbytes += [size] * len(sends)
    return CostModel(profile).price_messages(topology, 2, np.array(rank, int), np.array(step, int),
                                             np.array(peer, int), np.array(nbytes, float), nrecv)


def choose_threshold(collectives, topology, profile, candidates=(1, 2, 4, 8, 16, 32, 64, 128), seed=None):
    """The ``auto`` shape's flat threshold with the lowest predicted time under ``profile``.

    Parameters
    ----------
    collectives : Collectives
        What moves.
    topology : Topology
        The ranks and their nodes.
    profile : MachineProfile, str or path
        The machine profile, as :func:`price` takes it.
    candidates : sequence of int
        The thresholds tried.
    seed : int, optional
        The tree shape's seed.

    Returns
    -------
    threshold : int
        The fastest candidate.
    times : dict
        ``{threshold: predicted seconds}`` for every candidate.
    """
    times = {t: price(plans(collectives, topology, "auto", seed, t), collectives, topology, profile).time
             for t in candidates}
    return min(times, key=times.get), times
