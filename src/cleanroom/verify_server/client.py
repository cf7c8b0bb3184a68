"""The harness's client for the verify server (httpx).

Any sign that the verifier itself is broken or gone (a refused connection, a timeout, a
5xx, a response that is not the JSON it promised) raises `VerifierUnavailable`, which
converts to an ``invalid(verifier_unavailable)`` outcome: an infrastructure fault is
never scored as the agent's failure. A 4xx means the harness asked for something wrong
and raises `VerifierRejected`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from cleanroom.core.outcomes import Outcome, Reason
from cleanroom.core.tokens import Token, parse
from cleanroom.verify_server.verdict import form_verdict

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_TTL_S = 900.0


class VerifierUnavailable(Exception):
    """The verify server could not be reached or did not answer properly."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def outcome(self, **details: Any) -> Outcome:
        """The outcome this means for a rollout: invalid, verifier unavailable."""
        return Outcome.invalid(Reason.VERIFIER_UNAVAILABLE, self.detail, **details)


class VerifierRejected(Exception):
    """The verify server refused a request (a 4xx): the request itself was wrong."""

    def __init__(self, status: int, error: str, field: str | None = None) -> None:
        super().__init__(f"{status}: {error}" + (f" (field {field})" if field else ""))
        self.status = status
        self.error = error
        self.field = field


@dataclass(frozen=True)
class Lease:
    """A lease the server granted: where the agent submits, and what it is checked against."""

    lease_id: str
    env: str
    rollout_id: str
    token: str
    window: int
    form_url: str
    frames_url: str
    expires_at: str


@dataclass(frozen=True)
class Submission:
    """One stored form submission."""

    id: int
    text: str
    env: str
    rollout_id: str
    window: int
    submitted_at: str
    found_envs: tuple[str, ...]
    cross: bool


@dataclass(frozen=True)
class AuditRow:
    """A token submitted through a lease of another environment."""

    submission_id: int
    token: str
    token_env: str
    attributed_env: str
    lease_id: str
    rollout_id: str
    window: int
    submitted_at: str


@dataclass(frozen=True)
class AuditOverrun:
    """A lease of the window that tried to submit past its budget (``kind``: count or
    bytes): its rollout's own act."""

    lease_id: str
    env: str
    rollout_id: str
    kind: str


@dataclass(frozen=True)
class Audit:
    """The cross-environment submissions of one window, and its leases that overran
    their submission budget."""

    window: int
    rows: tuple[AuditRow, ...]
    cross: int
    overruns: tuple[AuditOverrun, ...] = ()


class VerifyClient:
    """A connection to one verify server, authenticated with the harness key."""

    def __init__(self, base_url: str, key: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=timeout,
            headers={"Authorization": f"Bearer {key}"},
            # The server is local to the harness; an environment proxy must not intercept.
            trust_env=False,
        )

    def close(self) -> None:
        """Close the underlying connections."""
        self._http.close()

    def __enter__(self) -> VerifyClient:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise VerifierUnavailable(f"{method} {path}: timed out ({exc!r})") from exc
        except httpx.TransportError as exc:
            raise VerifierUnavailable(f"{method} {path}: {exc!r}") from exc
        if response.status_code >= 500:
            raise VerifierUnavailable(f"{method} {path}: server error {response.status_code}")
        try:
            data = response.json()
        except ValueError as exc:
            raise VerifierUnavailable(f"{method} {path}: response is not JSON") from exc
        if response.status_code >= 400:
            error = data.get("error", "") if isinstance(data, dict) else ""
            field = data.get("field") if isinstance(data, dict) else None
            raise VerifierRejected(response.status_code, str(error), field)
        return data

    def healthz(self) -> bool:
        """True if the server answers its health check."""
        return bool(self._request("GET", "/v1/healthz").get("ok"))

    def lease(
        self,
        token: str | Token,
        *,
        env: str | None = None,
        rollout_id: str | None = None,
        window: int | None = None,
        ttl_s: float = DEFAULT_TTL_S,
    ) -> Lease:
        """Ask for a lease for the rollout ``token`` belongs to (fields default from the token)."""
        tok = token if isinstance(token, Token) else parse(token)
        env = env if env is not None else tok.env
        rollout_id = rollout_id if rollout_id is not None else tok.rollout_id
        window = window if window is not None else tok.rollout.window
        body = {
            "env": env,
            "rollout_id": rollout_id,
            "token": str(tok),
            "window": window,
            "ttl_s": ttl_s,
        }
        data = self._request("POST", "/v1/leases", json=body)
        try:
            return Lease(
                lease_id=data["lease_id"],
                env=env,
                rollout_id=rollout_id,
                token=str(tok),
                window=window,
                form_url=data["form_url"],
                frames_url=data["frames_url"],
                expires_at=data["expires_at"],
            )
        except (KeyError, TypeError) as exc:
            raise VerifierUnavailable(f"lease response is missing {exc}") from exc

    def close_lease(self, lease_id: str) -> None:
        """End a lease now (the rollout it was for is over): nothing more is stored through it."""
        self._request("POST", f"/v1/leases/{lease_id}/close")

    def submissions(self, lease_id: str) -> list[Submission]:
        """The submissions stored through one lease, oldest first."""
        data = self._request("GET", f"/v1/leases/{lease_id}/submissions")
        try:
            return [
                Submission(
                    id=s["id"],
                    text=s["text"],
                    env=s["env"],
                    rollout_id=s["rollout_id"],
                    window=s["window"],
                    submitted_at=s["submitted_at"],
                    found_envs=tuple(s["found_envs"]),
                    cross=bool(s["cross"]),
                )
                for s in data["submissions"]
            ]
        except (KeyError, TypeError) as exc:
            raise VerifierUnavailable(f"submissions response is malformed: {exc!r}") from exc

    def frames(self, lease_id: str) -> int:
        """How many frames the lease's frame page has counted while visible."""
        data = self._request("GET", f"/v1/frames/{lease_id}/count")
        try:
            return int(data["frames"])
        except (KeyError, TypeError, ValueError) as exc:
            raise VerifierUnavailable(f"frames response is malformed: {exc!r}") from exc

    def audit(self, window: int) -> Audit:
        """The submissions of ``window`` whose tokens name another environment."""
        data = self._request("GET", "/v1/audit", params={"window": window})
        try:
            rows = tuple(AuditRow(**row) for row in data["rows"])
            overruns = tuple(AuditOverrun(**o) for o in data.get("overruns", []))
            return Audit(int(data["window"]), rows, int(data["cross"]), overruns)
        except (KeyError, TypeError, ValueError) as exc:
            raise VerifierUnavailable(f"audit response is malformed: {exc!r}") from exc

    def verify_form(self, lease: Lease) -> Outcome:
        """The form task's outcome: success if the lease received the rollout's token,
        failure if not, invalid (verifier unavailable) if the server cannot say."""
        try:
            rows = self.submissions(lease.lease_id)
        except VerifierUnavailable as exc:
            return exc.outcome(lease_id=lease.lease_id)
        cross = sum(1 for s in rows if s.cross)
        return form_verdict(
            lease.token, [s.text for s in rows], lease_id=lease.lease_id, cross=cross
        )
