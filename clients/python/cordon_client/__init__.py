"""cordon-client: put a manifest, run a job through cordon serve, follow it,
wait for it, fetch its patch and report, revoke it at the broker.

Standard library only. Errors are raised with the services' own codes
(errors.py).
"""

from .client import Broker, Serve, read_key, verify_callback
from .errors import (
    CordonError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    JobNotStarted,
    NoAnswer,
    NotFound,
    Timeout,
    Unauthorized,
    Unavailable,
)

__all__ = [
    "Broker", "Serve", "read_key", "verify_callback", "CordonError",
    "Conflict", "Forbidden", "Gone", "Invalid", "JobNotStarted", "NoAnswer",
    "NotFound", "Timeout", "Unauthorized", "Unavailable",
]
__version__ = "0.1.0"
