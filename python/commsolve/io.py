"""Matrix Market files: read (serial, or in parallel by byte ranges), write.

Errors name the file and the line: ``bad.mtx:7: expected a real value``.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from . import _core
from ._collective import agree, mpi

__all__ = ["mmread", "mmwrite", "mminfo", "read_rows_parallel"]


def mminfo(path):
    """Header of a Matrix Market file: field, symmetry, nrows, ncols, nnz (entries stored).

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    MMHeader
        With attributes ``field`` (``"real"``, ``"integer"`` or ``"pattern"``), ``symmetry``
        (``"general"``, ``"symmetric"`` or ``"skew-symmetric"``), ``nrows``, ``ncols`` and
        ``nnz`` (entries stored).

    Raises
    ------
    ValueError
        For a folder, a file that cannot be opened, or a header that is malformed or
        unsupported (array format, complex, hermitian; the message names the file and the
        line).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"{path} is a folder, not a Matrix Market file")
    return _core.mm_read_header(path)


def _expand_symmetry(h, rows, cols, vals):
    if h.symmetry == "general":
        return rows, cols, vals
    off = rows != cols
    sign = -1.0 if h.symmetry == "skew-symmetric" else 1.0
    return (
        np.concatenate([rows, cols[off]]),
        np.concatenate([cols, rows[off]]),
        np.concatenate([vals, sign * vals[off]]),
    )


def _parse(path, h, part, nparts):
    b, e = _core.mm_chunk(h, path, part, nparts)
    return _core.mm_parse_chunk(path, h, b, e)


def _chunk_error(path, h, first_line, error_line, msg):
    return f"{path}:{h.data_line + first_line + error_line}: {msg}" if msg else None


def _triangle_error(path, h, first_line, first_lower, first_upper, comm=None):
    """A symmetric file may store either triangle (scipy reads both), not entries of both:
    mirrored, those would be counted twice. The message names the line of the first entry
    on the side found second (``first_*``: 0-based lines within this rank's chunk, -1: none)."""
    if h.symmetry == "general":
        return None
    lines = np.array([h.data_line + first_line + f if f >= 0 else np.iinfo(np.int64).max
                      for f in (first_lower, first_upper)], dtype=np.int64)
    if comm is not None:
        comm.Allreduce(mpi().IN_PLACE, lines, op=mpi().MIN)
    if lines.max() == np.iinfo(np.int64).max:
        return None
    sides = ("below", "above") if lines[0] < lines[1] else ("above", "below")
    return (f"{path}:{lines.max()}: {h.symmetry} file stores an entry {sides[1]} the diagonal after one "
            f"{sides[0]} it (line {lines.min()}): it must store one triangle only")


def _count_error(path, h, found):
    if found < h.nnz:
        return f"{path}: header declares {h.nnz} entries but the file holds {found} (truncated?)"
    if found > h.nnz:
        return f"{path}: header declares {h.nnz} entries but the file holds {found}"
    return None


def mmread(path):
    """Read a coordinate Matrix Market file into a scipy CSR matrix (duplicates are summed).

    Symmetric and skew-symmetric files are expanded to both triangles; they may store either
    triangle (the lower one, as the format asks, or the upper one, as scipy also reads), not
    entries of both.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    scipy.sparse.csr_matrix
        Of the shape the header declares.

    Raises
    ------
    ValueError
        As :func:`mminfo`; for a malformed entry, naming the file and the line; or when the
        file holds another number of entries than its header declares.
    """
    path = os.fspath(path)
    h = mminfo(path)
    rows, cols, vals, _, err_line, err, lower, upper = _parse(path, h, 0, 1)
    agree(None, _chunk_error(path, h, 0, err_line, err))
    agree(None, _triangle_error(path, h, 0, lower, upper))
    agree(None, _count_error(path, h, rows.size))
    rows, cols, vals = _expand_symmetry(h, rows, cols, vals)
    return sp.csr_matrix((vals, (rows, cols)), shape=(h.nrows, h.ncols))


def mmwrite(path, A, comment="", symmetry="general", field=None):
    """Write a sparse matrix as a coordinate Matrix Market file.

    Values are written so that they read back bit for bit.

    Parameters
    ----------
    path : str or os.PathLike
        The file (overwritten).
    A : scipy sparse matrix or 2-D array
        The matrix; real values only.
    comment : str, default ""
        Written after the header, each of its lines as a ``%`` comment line.
    symmetry : {"general", "symmetric", "skew-symmetric"}, default "general"
        ``symmetry="symmetric"`` (or ``"skew-symmetric"``) stores the lower triangle after
        checking that ``A`` has that symmetry.
    field : {"real", "integer", "pattern"}, optional
        ``real`` (default), ``integer`` or ``pattern``.

    Raises
    ------
    ValueError
        For a complex matrix, non-finite values, an unknown ``symmetry`` or ``field``, a
        matrix that is not square or lacks the ``symmetry`` asked for, or a file that cannot
        be opened for writing.
    """
    if np.iscomplexobj(A.data if sp.issparse(A) else np.asarray(A)):
        raise ValueError("complex matrices cannot be written (commsolve supports real values only)")
    A = sp.coo_matrix(A)
    if symmetry not in ("general", "symmetric", "skew-symmetric"):
        raise ValueError(f"unknown symmetry '{symmetry}'")
    if symmetry != "general":
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"a {symmetry} matrix must be square, got {A.shape}")
        sign = -1 if symmetry == "skew-symmetric" else 1
        if abs(A - sign * A.T).max() != 0:
            raise ValueError(f"matrix is not {symmetry}")
        keep = A.row > A.col if symmetry == "skew-symmetric" else A.row >= A.col
        A = sp.coo_matrix((A.data[keep], (A.row[keep], A.col[keep])), shape=A.shape)
    if field is None:
        field = "real"
    if field not in ("real", "integer", "pattern"):
        raise ValueError(f"unknown field '{field}'")
    vals = np.zeros(0) if field == "pattern" else np.ascontiguousarray(A.data, dtype=np.float64)
    if not np.isfinite(vals).all():
        raise ValueError("the matrix holds non-finite values (they could not be read back)")
    _core.mm_write(
        os.fspath(path), A.shape[0], A.shape[1], A.row.astype(np.int64), A.col.astype(np.int64),
        vals, field, symmetry, comment,
    )


def read_rows_parallel(path, comm, owner_of_rows):
    """Collective. Read a Matrix Market file in parallel and hand every rank the entries of
    the rows it owns.

    Each rank parses an equal byte range of the file; entries then travel to their row's
    owner (one all-to-all).

    Parameters
    ----------
    path : str or os.PathLike
        The file, the same on every rank.
    comm : mpi4py.MPI.Comm
        The communicator; every rank of it calls.
    owner_of_rows : callable
        ``owner_of_rows(header)`` (``header``: the file's :func:`mminfo`) returns a function
        mapping an array of row indices to owner ranks.

    Returns
    -------
    header : MMHeader
        The file's header, as :func:`mminfo` reads it.
    rows, cols : ndarray of int64
        This rank's entries' global row and column indices (symmetric files already
        expanded).
    vals : ndarray of float64
        Their values.

    Raises
    ------
    CollectiveError
        On every rank, naming the file and line: the errors :func:`mmread` raises.
    """
    path = os.fspath(path)
    header, error = None, None
    try:
        header = mminfo(path)
    except (ValueError, OSError) as e:
        error = str(e)
    agree(comm, error)
    h = header
    rows, cols, vals, nlines, err_line, err, lower, upper = _parse(path, h, comm.rank, comm.size)
    first_line = comm.exscan(nlines) or 0
    agree(comm, _chunk_error(path, h, first_line, err_line, err))
    agree(comm, _triangle_error(path, h, first_line, lower, upper, comm))
    agree(comm, _count_error(path, h, comm.allreduce(rows.size)))
    rows, cols, vals = _expand_symmetry(h, rows, cols, vals)
    dest = np.asarray(owner_of_rows(h)(rows), dtype=np.int64)
    order = np.argsort(dest, kind="stable")
    counts = np.bincount(dest, minlength=comm.size).astype(np.int64)
    recv_counts = np.empty_like(counts)
    comm.Alltoall(counts, recv_counts)
    MPI = mpi()
    out = []
    for arr, mpitype in ((rows, MPI.INT64_T), (cols, MPI.INT64_T), (vals, MPI.DOUBLE)):
        send = np.ascontiguousarray(arr[order])
        recv = np.empty(int(recv_counts.sum()), dtype=send.dtype)
        comm.Alltoallv([send, (counts, _displ(counts)), mpitype], [recv, (recv_counts, _displ(recv_counts)), mpitype])
        out.append(recv)
    return (h, *out)


def _displ(counts):
    d = np.zeros_like(counts)
    np.cumsum(counts[:-1], out=d[1:])
    return d
