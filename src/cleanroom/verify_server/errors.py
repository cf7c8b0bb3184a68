"""The verify server's request errors: each one is an HTTP status with a JSON body."""

from __future__ import annotations


class ApiError(Exception):
    """A request the server refuses; ``status`` is the HTTP status it answers with."""

    status = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def body(self) -> dict[str, object]:
        """The JSON error body: always ``error``, plus ``field`` when one field is at fault."""
        out: dict[str, object] = {"error": self.message, "status": self.status}
        if self.field is not None:
            out["field"] = self.field
        return out


class MalformedRequest(ApiError):
    """The body cannot be parsed at all (bad JSON, bad percent-escapes, invalid UTF-8)."""

    status = 400


class Unauthorized(ApiError):
    """The harness key is missing or wrong."""

    status = 401


class LeaseNotFound(ApiError):
    """No lease has this id."""

    status = 404


class LeaseExpired(ApiError):
    """The lease exists but its time is up: the form and frame pages are closed."""

    status = 410


class UnsupportedMediaType(ApiError):
    """The body is not in the format this endpoint reads."""

    status = 415


class InvalidField(ApiError):
    """The body parses but one field's value is not acceptable."""

    status = 422

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)


class SubmissionNotStored(ApiError):
    """The database did not take the submission (its batch's transaction failed)."""

    status = 503


class LeaseOverBudget(ApiError):
    """The lease has submitted all its budget allows (count or bytes): the submission is
    not stored, and the overrun is recorded as the lease's rollout's own act."""

    def __init__(self, message: str, *, status: int, kind: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind

    def body(self) -> dict[str, object]:
        """The JSON error body, naming which budget was passed."""
        return {**super().body(), "budget": self.kind}
