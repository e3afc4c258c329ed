"""The services' errors as exceptions.

Every cordon service answers an error as {"error": "snake_case_code",
"message": "..."} (422s add "problems"). CordonError carries all of it;
the subclass says the kind by the HTTP status, and a few codes have a
class of their own.
"""


class CordonError(Exception):
    """An error answer from a cordon service."""

    def __init__(self, status, code, message, body=None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body if isinstance(body, dict) else {}
        self.problems = self.body.get("problems", [])


class Unauthorized(CordonError):
    """401: no key, or one the service does not know."""


class Forbidden(CordonError):
    """403: the key may not call this, or the broker refused a grant."""


class NotFound(CordonError):
    """404: no such job, manifest, workspace or path."""


class Conflict(CordonError):
    """409: the job is still running, the key is in use, ..."""


class Gone(CordonError):
    """410: the patch is no longer on serve's disk."""


class Invalid(CordonError):
    """422: the request failed validation; .problems lists every problem."""


class JobNotStarted(CordonError):
    """502 job_not_started: the broker, hatch or proxy refused the job;
    .message says why and .result is cordon run's result."""

    @property
    def result(self):
        return self.body.get("result")


class Unavailable(CordonError):
    """503, or a dependency of the service is down."""


class NoAnswer(Unavailable):
    """The service did not answer at all (refused, reset, timed out)."""

    def __init__(self, url, reason):
        super().__init__(0, "no_answer", f"{url}: {reason}")


class Timeout(CordonError):
    """wait() ran out before the job stopped."""

    def __init__(self, job, seconds):
        super().__init__(0, "timeout", f"{job} still running after {seconds} s")


_BY_STATUS = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    503: Unavailable,
}
_BY_CODE = {"job_not_started": JobNotStarted}


def error_for(status, body):
    """The exception for an error answer (body parsed, or None)."""
    body = body if isinstance(body, dict) else {}
    code = body.get("error") or f"http_{status}"
    message = body.get("message") or ""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or CordonError
    return cls(status, code, message, body)
