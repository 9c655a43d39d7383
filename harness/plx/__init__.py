"""Everything that knows Polyaxon: the grid polyaxonfile, one tracked run per cell, pushing, the viewer.

Polyaxon itself is imported inside the functions that need it (about a second), never by these modules.
"""
