"""Series, every number accounted for in a journal (docs/reference/series.md). Exports only the config: a function
that serves no series loads no more."""

from .config import SeriesConfig as SeriesConfig
