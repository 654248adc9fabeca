"""One-to-one assignment on sparse candidate pairs, shared by the instance and point matchings:
whether the pairs are one to one already, the pairs taken greedily in a given order, and the
pairs whose matching has the least total cost, a pair costing `cost` (< 0: a benefit) and an
unmatched row or column nothing.

The pairs fall into groups, the connected components of the graph of pairs, and each group is
solved on its own, so the work follows the groups, never rows × columns of the whole image:
- a star (one row, or one column) takes its cheapest pair (equal costs: the lower index on its
  many side), all stars at once;
- any other group goes to scipy's linear_sum_assignment on its dense matrix (a non-pair costs 0:
  unmatched), or, above `dense_cells` cells, to scipy's sparse minimum-weight full matching with
  one dummy column per row (a pair costs K + cost, a dummy K, K above every benefit: every row
  is matched, to a pair or to its dummy, and the least total is the least total cost).
"""

from __future__ import annotations

import numpy as np

from evaluation.machine import load_scipy


def is_one_to_one(rows: np.ndarray, columns: np.ndarray) -> bool:
    """Whether no row and no column appears twice: the pairs are a matching already."""
    return len(np.unique(rows)) == len(rows) and len(np.unique(columns)) == len(columns)


def greedy_matching(order: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Positions (sorted) of the pairs taken in `order`, each when neither its row nor its column
    is matched yet."""
    used_rows, used_columns, taken = set(), set(), []
    for k, row, column in zip(order.tolist(), rows[order].tolist(), columns[order].tolist(), strict=True):
        if row not in used_rows and column not in used_columns:
            used_rows.add(row)
            used_columns.add(column)
            taken.append(k)
    return np.sort(np.asarray(taken, dtype=np.int64))


def min_cost_matching(rows: np.ndarray, columns: np.ndarray, costs: np.ndarray, dense_cells: int) -> np.ndarray:
    """Positions (sorted) of the pairs (rows[k], columns[k]) of the matching of least total cost;
    every cost < 0, the pairs distinct."""
    load_scipy()  # SciPy's OpenBLAS calls exit(1) when it cannot map its buffer: a MemoryError first
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    row_ids, row_of = np.unique(rows, return_inverse=True)
    column_ids, column_of = np.unique(columns, return_inverse=True)
    n_rows, n_columns = len(row_ids), len(column_ids)
    nodes = n_rows + n_columns
    graph = csr_array((np.ones(len(row_of)), (row_of, n_rows + column_of)), shape=(nodes, nodes))
    _, component = connected_components(graph, directed=False)
    group = component[row_of]  # of each pair
    rows_in = np.bincount(component[:n_rows], minlength=nodes)[group]
    columns_in = np.bincount(component[n_rows:], minlength=nodes)[group]
    star = (rows_in == 1) | (columns_in == 1)
    many_side = np.where(rows_in == 1, columns, rows)
    order = np.flatnonzero(star)[np.lexsort((many_side[star], costs[star], group[star]))]
    first = np.ones(len(order), dtype=bool)
    first[1:] = group[order][1:] != group[order][:-1]
    chosen = [order[first]]
    rest = np.flatnonzero(~star)
    rest = rest[np.argsort(group[rest], kind="stable")]
    bounds = np.flatnonzero(np.diff(group[rest])) + 1
    for pairs in np.split(rest, bounds) if rest.size else ():
        chosen.append(pairs[_solve(row_of[pairs], column_of[pairs], costs[pairs], dense_cells)])
    return np.sort(np.concatenate(chosen))


def largest_total_matching(rows: np.ndarray, columns: np.ndarray, weights: np.ndarray, dense_cells: int) -> np.ndarray:
    """Positions (sorted) of the one-to-one pairs of largest total weight (every weight > 0, the
    pairs distinct): the whole problem on one dense matrix (scipy's linear_sum_assignment, whose
    tie-breaks decide) when the rows and columns present make at most `dense_cells` cells, else
    min_cost_matching group by group."""
    load_scipy()  # SciPy's OpenBLAS calls exit(1) when it cannot map its buffer: a MemoryError first
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(np.unique(rows)) * len(np.unique(columns)) > dense_cells:
        return min_cost_matching(rows, columns, -weights, dense_cells)
    return np.sort(_solve(rows, columns, -weights, dense_cells))


def _solve(rows: np.ndarray, columns: np.ndarray, costs: np.ndarray, dense_cells: int) -> np.ndarray:
    """Positions of the least-cost matching of one group of pairs."""
    row_ids, row_of = np.unique(rows, return_inverse=True)
    column_ids, column_of = np.unique(columns, return_inverse=True)
    n_rows, n_columns = len(row_ids), len(column_ids)
    order = np.lexsort((column_of, row_of))
    keys = row_of[order].astype(np.int64) * n_columns + column_of[order]
    if n_rows * n_columns <= dense_cells:
        from scipy.optimize import linear_sum_assignment

        matrix = np.zeros((n_rows, n_columns))
        matrix[row_of, column_of] = costs
        assigned_rows, assigned_columns = linear_sum_assignment(matrix)
        real = matrix[assigned_rows, assigned_columns] < 0
    else:
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import min_weight_full_bipartite_matching

        top = 1.0 - float(costs.min())
        graph = csr_array((np.concatenate([top + costs, np.full(n_rows, top)]),
                           (np.concatenate([row_of, np.arange(n_rows)]),
                            np.concatenate([column_of, n_columns + np.arange(n_rows)]))),
                          shape=(n_rows, n_columns + n_rows))
        assigned_rows, assigned_columns = min_weight_full_bipartite_matching(graph)
        real = assigned_columns < n_columns
    wanted = assigned_rows[real].astype(np.int64) * n_columns + assigned_columns[real]
    return order[np.searchsorted(keys, wanted)]
