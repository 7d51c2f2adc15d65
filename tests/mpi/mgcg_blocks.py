"""MPI script for tests/test_mgcg.py: MGCG with a box of cells per rank (decomposition="blocks")
on K ranks; rank 0 prints one JSON line with
- "matrix": the box-numbered operator against scipy's, permuted by the cells each rank owns;
- "runs": per CGA mode, slabs and blocks with Jacobi smoothing (partition-independent):
  iterations, residual histories, the true residual by scipy, the levels' ranks;
- "halo": per level of a 27-point hierarchy on a 2 x 2 x 1 process grid, every rank's sent
  messages (receiver, values) from the real plans, and as the virtual-scale analysis
  (commsolve.mg.analysis) counts them from the boxes' owner maps."""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import commsolve as cs
from commsolve import gallery
from commsolve.mg.analysis import Level, level_messages

comm = MPI.COMM_WORLD
K = int(sys.argv[1])
assert comm.size == K, f"launched with {comm.size} ranks, expected {K}"
out = {"runs": {}}

n = 12
G = sp.csr_matrix(gallery.from_spec("groundwater3d:12,contrast=1e4"))
b = np.random.default_rng(1).standard_normal(G.shape[0])


def global_x(solver, x):
    xg = np.zeros(G.shape[0])
    for cells, values in zip(comm.allgather(solver.cells()), comm.allgather(x)):
        xg[cells] = values
    return xg


for dec in ("slabs", "blocks"):
    for cga in ("none", "flat", "hierarchical"):
        s = cs.mg.MGCG(G, comm, grid=(n, n, n), smoother="jacobi", decomposition=dec, cga=cga, cga_rows=20,
                       hcga_rows=200, hcga_group=2)
        x, info = s.solve(b[s.cells()], tol=1e-9)
        xg = global_x(s, x)
        d = s.describe()
        if dec == "blocks" and cga == "none":
            cells = np.concatenate(comm.allgather(s.cells()))
            B = s.A.to_global(root=None)
            out["matrix"] = {"process_grid": list(s.boxes.procs), "cells_permutation": bool(
                np.array_equal(np.sort(cells), np.arange(G.shape[0]))),
                "equal": bool(abs(B - G[cells][:, cells]).max() == 0 and B.nnz == G.nnz)}
        if comm.rank == 0:
            out["runs"][f"{dec}/{cga}"] = {
                "info": info, "iterations": s.last_solve["iterations"], "residuals": s.last_solve["residuals"],
                "residual": float(np.linalg.norm(b - G @ xg) / np.linalg.norm(b)), "ranks": [lv["ranks"] for lv in d]}

s = cs.mg.MGCG("hpcg:6", comm, smoother="symmetric-gs", decomposition="blocks", procs=(2, 2, 1), format="dia")
x, info = s.solve(tol=1e-9)
out["hpcg"] = {"info": info, "iterations": s.last_solve["iterations"]}
out["halo"] = []
boxes = s.boxes
for lvl in s.ml.levels:
    real = sorted((int(p), int(c)) for st in lvl.A.plan.steps for p, c in zip(st.send_peers, np.diff(st.send_ptr)))
    real = comm.gather(real, root=0)
    if comm.rank == 0:
        owners = tuple(np.searchsorted(c, np.arange(e), side="right") - 1 for c, e in zip(boxes.cuts, boxes.extents))
        recv, send, nbytes = level_messages(Level(boxes.extents, owners, boxes.procs), 27)
        model = [sorted((int(r), int(nb) // 8) for r, sd, nb in zip(recv, send, nbytes) if sd == rank)
                 for rank in range(comm.size)]
        out["halo"].append({"extents": list(boxes.extents), "real": real, "model": model})
    boxes = boxes.coarser()

if comm.rank == 0:
    print(json.dumps(out), flush=True)
