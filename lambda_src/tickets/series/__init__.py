"""Series: counters whose every number is accounted for in a journal (docs/reference/series.md): config.py (cdk.json's
`tickets.series`, periods, ids), journal.py (entries), requests.py, store.py (the series table's calls), routes.py
(the handlers). Exports only the config: settings.py imports it, and a function that serves no series loads no more."""

from .config import SeriesConfig as SeriesConfig
from .config import parse_series as parse_series
