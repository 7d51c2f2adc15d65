"""CommStats: messages and bytes per rank, per plan step, intra-node and inter-node.

The same numbers come from a plan (planned, without running it) and from the MPI executor
(recorded while running); tests require the two to be equal on every rank.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CommStats", "FIELDS", "summarize", "format_summary"]

# Column order of the (steps, 8) arrays the core returns.
FIELDS = (
    "msgs_sent_intra", "msgs_sent_inter", "bytes_sent_intra", "bytes_sent_inter",
    "msgs_recv_intra", "msgs_recv_inter", "bytes_recv_intra", "bytes_recv_inter",
)


class CommStats:
    """One rank's communication counts, shape ``(steps, 8)`` in :data:`FIELDS` order.

    Parameters
    ----------
    array : array_like of int
        The counts, reshaped to ``(steps, 8)`` and kept as the int64 attribute ``array``.
    """

    def __init__(self, array):
        self.array = np.asarray(array, dtype=np.int64).reshape(-1, len(FIELDS))

    @property
    def nsteps(self):
        """Number of plan steps (rows of ``array``)."""
        return self.array.shape[0]

    def total(self):
        """Counts summed over steps, as a dict keyed by :data:`FIELDS`.

        Returns
        -------
        dict of str to int
        """
        return dict(zip(FIELDS, (int(v) for v in self.array.sum(axis=0))))

    def scaled(self, k):
        """These counts repeated ``k`` times (what ``k`` runs of a plan record).

        Parameters
        ----------
        k : int
            The number of runs.

        Returns
        -------
        CommStats
        """
        return CommStats(self.array * k)

    def reversed(self):
        """The counts of the same plan run in reverse (sent and received swap).

        Returns
        -------
        CommStats
        """
        return CommStats(self.array[:, [4, 5, 6, 7, 0, 1, 2, 3]])

    def words_received(self, steps=None):
        """Values (8-byte words) received in ``steps``: bytes less each message's 8-byte key,
        over 8 (what the message engine's messages carry).

        Parameters
        ----------
        steps : iterable of int, optional
            Step indices; all steps if None.

        Returns
        -------
        int
        """
        a = self.array if steps is None else self.array[list(steps)]
        return int((a[:, 6] + a[:, 7] - 8 * (a[:, 4] + a[:, 5])).sum()) // 8

    def to_dict(self):
        """The counts as plain data (for JSON).

        Returns
        -------
        dict
            ``"steps"``: a list with a dict keyed by :data:`FIELDS` for each step;
            ``"total"``: :meth:`total`.
        """
        return {"steps": [dict(zip(FIELDS, map(int, row))) for row in self.array], "total": self.total()}

    def __eq__(self, other):
        return isinstance(other, CommStats) and np.array_equal(self.array, other.array)

    def __repr__(self):
        t = self.total()
        return (
            f"CommStats(steps={self.nsteps}, sent {t['msgs_sent_intra']}+{t['msgs_sent_inter']} msgs "
            f"{t['bytes_sent_intra']}+{t['bytes_sent_inter']} B intra+inter)"
        )


def summarize(per_rank):
    """Max, mean and min over ranks of every total field.

    Parameters
    ----------
    per_rank : list of CommStats
        One per rank.

    Returns
    -------
    dict
        ``"nranks"`` (the length of ``per_rank``), ``"steps"`` (the most steps of any rank),
        and ``"max"``, ``"mean"`` and ``"min"``, each a dict keyed by :data:`FIELDS` (ints;
        floats for the mean) of the ranks' :meth:`CommStats.total`.
    """
    totals = np.array([[s.total()[f] for f in FIELDS] for s in per_rank], dtype=np.int64)
    return {
        "nranks": len(per_rank),
        "steps": max((s.nsteps for s in per_rank), default=0),
        "max": dict(zip(FIELDS, map(int, totals.max(axis=0)))),
        "mean": dict(zip(FIELDS, map(float, totals.mean(axis=0)))),
        "min": dict(zip(FIELDS, map(int, totals.min(axis=0)))),
    }


def format_summary(summary):
    """A small text table of :func:`summarize`'s result (sent side; received is symmetric).

    Parameters
    ----------
    summary : dict
        What :func:`summarize` returns.

    Returns
    -------
    str
        A header line, then one line per sent field with its max and mean.
    """
    lines = [f"{'per rank':<18}{'max':>14}{'mean':>14}"]
    for f in FIELDS[:4]:
        lines.append(f"{f:<18}{summary['max'][f]:>14,}{summary['mean'][f]:>14,.1f}")
    return "\n".join(lines)
