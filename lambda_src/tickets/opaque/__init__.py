"""Opaque ids (docs/explanation/opaque-ids.md), loaded only where a counter is opaque."""

from .ids import ALPHABETS as ALPHABETS
from .ids import CHECKS as CHECKS
from .ids import KEY_VERSIONS as KEY_VERSIONS
from .ids import NOT_COMPUTED as NOT_COMPUTED
from .ids import OpaqueConfig as OpaqueConfig
from .ids import OpaqueIds as OpaqueIds
from .ids import OpaqueKeyError as OpaqueKeyError
from .ids import Rounds as Rounds
from .ids import parse_keys as parse_keys
from .ids import round_mix as round_mix
from .ids import spread as spread
