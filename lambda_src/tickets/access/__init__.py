"""Access rules (docs/how-to/access-rules.md): rules.py (plain: synthesis imports it), store.py (SSM)."""

from .rules import ACCESS_DIGEST_ENV as ACCESS_DIGEST_ENV
from .rules import ACCESS_PARAMETERS_ENV as ACCESS_PARAMETERS_ENV
from .rules import ASSUMED_ROLE_PATTERN as ASSUMED_ROLE_PATTERN
from .rules import IAM_ARN_PATTERN as IAM_ARN_PATTERN
from .rules import MAX_RULES_PARAMETERS as MAX_RULES_PARAMETERS
from .rules import OPERATIONS as OPERATIONS
from .rules import RULES_PARAMETER_BYTES as RULES_PARAMETER_BYTES
from .rules import Identity as Identity
from .rules import Rules as Rules
