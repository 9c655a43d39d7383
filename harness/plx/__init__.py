"""Everything that knows Polyaxon: the grid polyaxonfile, one tracked run per cell, pushing, the viewer.

Polyaxon itself is imported inside the functions that need it (about a second), never by these modules.
"""

from typing import Literal

__all__ = ["DEFAULT_PROJECT", "TRACKING_MODES", "TrackingMode"]

#: Where each cell's run is tracked (``harness.plx.tracking`` says what each mode does). Kept here, beside
#: nothing heavier, so the command line can offer them without importing the checker and the records.
TrackingMode = Literal["offline", "server", "none"]
TRACKING_MODES: tuple[TrackingMode, ...] = ("offline", "server", "none")
DEFAULT_PROJECT = "default/recovery-harness"
