"""Dense linear algebra on 2.5D process grids (Solomonik and Demmel): the multiply and LU
with inputs replicated over c layers, cutting each rank's words by sqrt(c)."""

from .algorithms import ROLES, DenseLU, DenseReport, LUPlan, MatmulPlan, lu, matmul, virtual_stats, words_leading_term
from .matrix import DistributedDense, default_grid25, parse_grid25, random_entries

__all__ = ["ROLES", "DenseLU", "DenseReport", "DistributedDense", "LUPlan", "MatmulPlan", "default_grid25", "lu", "matmul", "parse_grid25",
           "random_entries", "virtual_stats", "words_leading_term"]
