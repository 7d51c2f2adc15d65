"""The communication models, as plain functions of their parameters (numpy-friendly).

Thesis (Bienz), chapters 2.3, 3 and 5.3; topology-aware collectives (Solomonik).
Times in seconds, sizes in bytes, rates in bytes/s.
"""

from __future__ import annotations

import numpy as np

__all__ = ["postal", "max_rate", "queue_search", "contention", "binomial_multicast",
           "rectangular_multicast", "rectangular_reduction", "sparsified_spmv_comm", "THESIS_CH4_ALPHA",
           "THESIS_CH4_BETA"]

# Blue Waters as thesis Section 4.4 prices a level's SpMV (HPCC's latency and inverse bandwidth)
THESIS_CH4_ALPHA, THESIS_CH4_BETA = 1.8e-6, 1.8e-9


def postal(alpha, rate, nbytes):
    """Postal model, eq. 2.1: ``alpha + s / R_b``.

    Parameters
    ----------
    alpha : float or array_like
        The start-up cost (s).
    rate : float or array_like
        The rate ``R_b`` (bytes/s).
    nbytes : float or array_like
        The message size ``s`` (bytes).

    Returns
    -------
    ndarray or float
        Seconds per message.

    Examples
    --------
    >>> from commsolve.model import postal
    >>> float(postal(1e-6, 1e9, 1000))
    2e-06
    """
    return alpha + np.asarray(nbytes, dtype=float) / rate


def max_rate(alpha, rate, nbytes, ppn, injection=np.inf):
    """Max-rate model, eq. 2.2: ``alpha + ppn s / min(R_N, ppn R_b)``. With
    ``ppn R_b < R_N`` it is the postal model.

    Parameters
    ----------
    alpha : float or array_like
        The start-up cost (s).
    rate : float or array_like
        A process's rate ``R_b`` (bytes/s).
    nbytes : float or array_like
        The message size ``s`` (bytes).
    ppn : float or array_like
        The number of processes of the node communicating at once.
    injection : float or array_like
        The node's injection rate ``R_N`` (bytes/s; inf: no limit).

    Returns
    -------
    ndarray
        Seconds per message.
    """
    ppn = np.asarray(ppn, dtype=float)
    return alpha + ppn * np.asarray(nbytes, dtype=float) / np.minimum(injection, ppn * rate)


def queue_search(gamma, nmessages):
    """Queue search penalty, eq. 3.1: ``gamma n^2`` for ``n`` messages received at once
    (the upper bound: receives matched in the worst order).

    Parameters
    ----------
    gamma : float
        Seconds per queue search step.
    nmessages : int or array_like
        The messages ``n`` received at once.

    Returns
    -------
    ndarray or float
        Seconds.
    """
    n = np.asarray(nmessages, dtype=float)
    return gamma * n * n


def contention(delta, hops, bytes_per_process, ppn):
    """Network contention penalty, eqs. 3.3 and 3.5: ``delta * 2 h^3 b ppn``.

    Parameters
    ----------
    delta : float
        Seconds per byte of link contention.
    hops : float or array_like
        ``h``, the average hops a byte travels in a cube partition of the torus.
    bytes_per_process : float or array_like
        ``b``, the average bytes a process sends off-node.
    ppn : int or array_like
        Processes per node.

    Returns
    -------
    ndarray or float
        Seconds.
    """
    return delta * 2.0 * np.asarray(hops, dtype=float) ** 3 * bytes_per_process * ppn


def binomial_multicast(nbytes, nprocs, bandwidth, overhead, latency):
    """Binomial multicast: ``log2(P) (m/B_n + 2o + L)``: the root sends log2(P) copies.

    Parameters
    ----------
    nbytes : float or array_like
        The bytes ``m`` multicast.
    nprocs : int or array_like
        The processes ``P`` reached.
    bandwidth : float
        The link rate ``B_n`` (bytes/s).
    overhead : float
        The overhead ``o`` per message end (s).
    latency : float
        The network latency ``L`` (s).

    Returns
    -------
    ndarray or float
        Seconds.
    """
    return np.log2(nprocs) * (nbytes / bandwidth + 2 * overhead + latency)


def rectangular_multicast(nbytes, nprocs, dims, bandwidth, overhead, latency):
    """Rectangular (topology-aware) multicast on a d-dimensional torus:
    ``m/B_n + 2(d+1) o + 3L + d P^(1/d) (2o + L)`` (bandwidth, start-up, path terms).

    Parameters
    ----------
    nbytes : float or array_like
        The bytes ``m`` multicast.
    nprocs : int or array_like
        The processes ``P`` reached.
    dims : int
        The torus's dimensions ``d``.
    bandwidth : float
        The link rate ``B_n`` (bytes/s).
    overhead : float
        The overhead ``o`` per message end (s).
    latency : float
        The network latency ``L`` (s).

    Returns
    -------
    ndarray or float
        Seconds.
    """
    d = dims
    return (nbytes / bandwidth + 2 * (d + 1) * overhead + 3 * latency
            + d * nprocs ** (1.0 / d) * (2 * overhead + latency))


def rectangular_reduction(nbytes, nprocs, dims, bandwidth, overhead, latency, flop_rate, memory_bandwidth):
    """Rectangular reduction: the multicast tree inverted, each node combining 2m data:
    ``max(m/(8 gamma), 3m/beta, m/B_n) + 2(d+1) o + 3L + d P^(1/d) (2o + L)`` (8-byte words,
    3 memory passes).

    Parameters
    ----------
    nbytes : float
        The bytes ``m`` reduced.
    nprocs : int or array_like
        The processes ``P`` reduced over.
    dims : int
        The torus's dimensions ``d``.
    bandwidth : float
        The link rate ``B_n`` (bytes/s).
    overhead : float
        The overhead ``o`` per message end (s).
    latency : float
        The network latency ``L`` (s).
    flop_rate : float
        ``gamma``, the flop rate (flop/s).
    memory_bandwidth : float
        ``beta``, the memory bandwidth (bytes/s).

    Returns
    -------
    float or ndarray
        Seconds.
    """
    d = dims
    stream = max(nbytes / (8 * flop_rate), 3 * nbytes / memory_bandwidth, nbytes / bandwidth)
    return stream + 2 * (d + 1) * overhead + 3 * latency + d * nprocs ** (1.0 / d) * (2 * overhead + latency)


def sparsified_spmv_comm(msgs, nbytes, alpha=THESIS_CH4_ALPHA, beta=THESIS_CH4_BETA):
    """The communication term of thesis eq. 4.5, ``max_p s_p (alpha + beta n_p)``, with
    ``s_p`` a rank's messages and ``n_p`` their mean size (so ``s_p n_p`` its bytes):
    ``max_p (alpha s_p + beta bytes_p)`` over the per-rank arrays ``msgs`` and ``nbytes``.

    Parameters
    ----------
    msgs : array_like
        Per rank, its messages ``s_p``.
    nbytes : array_like
        Per rank, its bytes ``bytes_p``.
    alpha : float
        Seconds per message (default: Blue Waters as thesis Section 4.4 prices a level's
        SpMV, HPCC's latency).
    beta : float
        Seconds per byte (default: HPCC's inverse bandwidth on Blue Waters).

    Returns
    -------
    float
        Seconds; 0 for no ranks.
    """
    msgs, nbytes = np.asarray(msgs, dtype=float), np.asarray(nbytes, dtype=float)
    return float(np.max(alpha * msgs + beta * nbytes)) if msgs.size else 0.0
