"""Running cases: planning a grid, one case, one cell, and a whole grid with its files and tracking."""

from harness.run.case import run_case
from harness.run.cell import CellJob, CellResult, execute_cell
from harness.run.grid import GridOptions, GridSummary, run_grid
from harness.run.plan import Case, Cell, Grid, Plan, UsageError, load_grid, plan_cells, reproduce_command

__all__ = [
    "Case",
    "Cell",
    "CellJob",
    "CellResult",
    "Grid",
    "GridOptions",
    "GridSummary",
    "Plan",
    "UsageError",
    "execute_cell",
    "load_grid",
    "plan_cells",
    "reproduce_command",
    "run_case",
    "run_grid",
]
