"""MPI script for tests/test_mgcg.py: on K ranks, rank 0 prints one JSON line with
- "moves": for contiguous and strided rows, every target rank count m: the moved matrix
  against scipy's (rows, values), the gathered vector against the global one at the leaders'
  rows, the scatter's round trip, the leaders' count;
- "agglomerated": MGCG on groundwater3d:12 for each CGA mode with a partition-independent
  smoother (Jacobi) and with IC(0): iterations, residual histories, true residual (scipy),
  the ranks of every level, and the busiest receiver's messages of each move;
- "auto": MGCG with the CGA mode and switches chosen by the cost model (its predictions, the
  levels' ranks);
- "placements": every hCGA placement the model priced, built: its levels' ranks, and the
  leaders' real messages against the ones the model merged from the unmoved plans;
- "amg": classical AMG with and without agglomeration (level sizes, iterations, Jacobi);
- "formats": the distributed SpMV in every format against scipy's product, and the residual
  b - A x after a symmetric Gauss-Seidel pre-smoothing step against scipy's."""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import commsolve as cs
from commsolve import amg, gallery
from commsolve.amg.cycle import Smoother
from commsolve.mg.choice import merged_tables
from commsolve.mg.stages import placement_stages
from commsolve.model.pricing import message_table
from commsolve.redistribute import agglomeration

comm = MPI.COMM_WORLD
K = int(sys.argv[1])
assert comm.size == K, f"launched with {comm.size} ranks, expected {K}"
out = {"moves": [], "agglomerated": {}, "amg": {}, "formats": {}}

A = sp.csr_matrix(gallery.from_spec("groundwater3d:8,contrast=1e4"))
x = np.random.default_rng(0).standard_normal(A.shape[0])
for part in ("contiguous", "strided"):
    Ap = cs.ParCSR.from_global(A, comm, partition=part)
    for m in range(1, K + 1):
        move = agglomeration(Ap, m)
        B = move.matrix(Ap)
        y = move.gather(x[Ap.owned_rows()])
        back = move.scatter(y)
        ok_round = bool(np.array_equal(back, x[Ap.owned_rows()]))
        if B is not None:
            G = B.to_global(root=None)  # collective on the leaders
            ok_matrix = bool(abs(G - A).max() == 0 and G.nnz == A.nnz)
            ok_gather = bool(np.array_equal(y, x[B.owned_rows()]))
            leaders = B.comm.size
        else:
            ok_matrix, ok_gather, leaders = True, y.size == 0, None
        flags = comm.gather((ok_round, ok_matrix, ok_gather, leaders), root=0)
        if comm.rank == 0:
            out["moves"].append({"partition": part, "m": m, "round_trip": all(f[0] for f in flags),
                                 "matrix": all(f[1] for f in flags), "gather": all(f[2] for f in flags),
                                 "leaders": flags[0][3]})

n = 12
G = sp.csr_matrix(gallery.from_spec(f"groundwater3d:{n}"))
b_global = np.random.default_rng(1).standard_normal(G.shape[0])
for smoother in ("jacobi", "ic0"):
    for cga in ("none", "flat", "hierarchical"):
        s = cs.mg.MGCG(G, comm, grid=(n, n, n), smoother=smoother, cga=cga, cga_rows=20, hcga_rows=200,
                       hcga_group=2)
        rows = s.A.owned_rows()
        xs, info = s.solve(b_global[rows], tol=1e-9, maxiter=400)
        xg = s.A.gather(xs, root=None)
        d = s.describe()
        if comm.rank == 0:
            out["agglomerated"][f"{smoother}/{cga}"] = {
                "info": info, "iterations": s.last_solve["iterations"], "residuals": s.last_solve["residuals"],
                "residual": float(np.linalg.norm(b_global - G @ xg) / np.linalg.norm(b_global)),
                "ranks": [lv["ranks"] for lv in d], "rows": [lv["rows"] for lv in d],
                "moved": [lv["moved"] for lv in d if "moved" in lv],
                "report_ranks": [lv["ranks"] for lv in s.last_solve["levels"]]}

s = cs.mg.MGCG(G, comm, grid=(n, n, n), cga="auto", profile="bluewaters", hcga_group=2)
xs, info = s.solve(b_global[s.A.owned_rows()], tol=1e-9, maxiter=400)
d = s.describe()
if comm.rank == 0:
    out["auto"] = {"choice": s.cga_choice, "ranks": [lv["ranks"] for lv in d], "info": info, "stages": s.stages}

# Every hCGA placement the model priced, built: its levels land where it said, and the leaders' real plans send
# the messages the model merged from the unmoved hierarchy's plans (bytes: at most the merged sums).
flat = amg.solver(G, comm, method="geometric", grid=(n, n, n), max_coarse=1)  # as MGCG's
tables = [comm.gather(message_table(lvl.A.plan), root=0) for lvl in flat.levels]
out["placements"] = []
for c in s.cga_choice["candidates"]:
    if c["mode"] != "hierarchical":
        continue
    ml = amg.solver(G, comm, method="geometric", grid=(n, n, n), max_coarse=1,
                    agglomerate=placement_stages(c, [lvl.rows for lvl in flat.levels], comm.size))
    s1, s2 = c["levels"]
    real = []
    if ml.inner is not None:  # the leaders: their levels s1 .. s2 - 1, back in the world's rank numbers
        g = -(-comm.size // ml.inner.comm.size)
        for lvl in ml.inner.levels[: s2 - s1]:
            t = ml.inner.comm.gather(message_table(lvl.A.plan), root=0)
            real.append(None if t is None else sorted((int(a) * g, int(b) * g, float(nb)) for tb in t
                                                      for a, b, nb in zip(tb["rank"], tb["peer"], tb["nbytes"])))
    level_ranks = ml.level_ranks
    if comm.rank == 0:
        leader = np.arange(comm.size) // g * g
        merged = [sorted((int(a), int(b), float(nb)) for tb in merged_tables(tables[k], leader)
                         for a, b, nb in zip(tb["rank"], tb["peer"], tb["nbytes"])) for k in range(s1, s2)]
        out["placements"].append({"levels": c["levels"], "ranks": c["ranks"], "level_ranks": level_ranks,
                                  "real": real, "merged": merged})

s = cs.mg.MGCG(G, comm, grid=(n, n, n), cga="flat", cga_rows=200, max_levels=3)  # max_levels across the move
twice = amg.solver(G, comm, method="geometric", grid=(n, n, n), agglomerate=[(1000, 2), (1000, 1)])
d, d2 = s.describe(), twice.describe()
if comm.rank == 0:
    out["max_levels"] = [lv["ranks"] for lv in d]
    out["twice"] = [(lv["ranks"], lv.get("moved")) for lv in d2]

P = sp.csr_matrix(gallery.from_spec("poisson3d:14"))
bp = np.random.default_rng(2).standard_normal(P.shape[0])
for ag in (None, [(150, 1)]):
    ml = amg.solver(P, comm, smoother="jacobi", agglomerate=ag, max_coarse=8)
    xs, info = ml.solve(bp[ml.A.owned_rows()], tol=1e-9)
    if comm.rank == 0:
        out["amg"][str(ag)] = {"rows": ml.describe()[0]["rows"], "iterations": ml.last_solve["iterations"],
                               "residuals": ml.last_solve["residuals"], "level_ranks": ml.level_ranks,
                               "complexity": ml.operator_complexity}
    else:
        ml.describe()

for spec in ("groundwater3d:9", "poisson2d:20", "poisson3d27:7", "random:rows=300,nnz_per_row=9"):
    M = sp.csr_matrix(gallery.from_spec(spec))
    Mp = cs.ParCSR.from_global(M, comm, partition="strided" if "random" in spec else "contiguous")
    v = np.random.default_rng(3).standard_normal(M.shape[0])
    ref = M @ v
    errs = {}
    for fmt in ("csr", "ell", "sliced-ell", "sell", "sell-4-16", "dia"):
        if fmt == "dia" and "random" in spec:
            continue
        Mp.set_format(fmt)
        got = Mp.gather(Mp.matvec(v[Mp.owned_cols()]), root=None)
        errs[fmt] = float(np.abs(got - ref).max() / np.abs(ref).max())
        if fmt in ("csr", "dia", "sell") and "random" not in spec:  # symmetric Gauss-Seidel from 0 and its residual (fused on CSR, DIA)
            xs, rs = np.zeros(Mp.local_rows), np.zeros(Mp.local_rows)
            Smoother(Mp, "symmetric-gs").pre_residual(v[Mp.owned_rows()], xs, rs)
            xg, rg = Mp.gather(xs, root=None), Mp.gather(rs, root=None)
            errs[f"{fmt}/residual"] = float(np.abs(rg - (v - M @ xg)).max() / np.abs(v).max())
    if comm.rank == 0:
        out["formats"][spec] = errs

if comm.rank == 0:
    print(json.dumps(out), flush=True)
