"""The accounts app's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from core.conf import AppSettings, Tunable


class AccountsSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""

    API_KEY_CACHE_SECONDS = Tunable(
        10,
        minimum=0,
        maximum=3600,
        doc="resolved keys are kept in the shared cache, and on-behalf-of users per process, this long; "
        "a revocation through the service holds at once, a change made behind its back within this "
        "many seconds (0 disables both)",
    )
    API_KEY_LAST_USED_RESOLUTION = Tunable(
        300,
        minimum=0,
        maximum=7 * 24 * 3600,
        doc="how often a key's last_used_at is refreshed, in seconds; between refreshes a request "
        "with that key writes nothing about its use",
    )


accounts_settings = AccountsSettings()


class ThrottleSettings(AppSettings):
    """Rate limits (``accounts.throttling``): requests per ``THROTTLE_WINDOW_SECONDS``; 0 switches one off."""

    THROTTLE_WINDOW_SECONDS = Tunable(60, minimum=1, maximum=3600, doc="the length of one rate-limit window")
    THROTTLE_SERVICE_KEY_REQUESTS = Tunable(
        120_000,
        minimum=0,
        doc="requests per window and service key (the assistant's backend posting for all its users)",
    )
    THROTTLE_USER_KEY_REQUESTS = Tunable(1200, minimum=0, doc="requests per window and user key")
    THROTTLE_USER_REQUESTS = Tunable(
        1200, minimum=0, doc="requests per window and user, whatever the credential (session, key, on-behalf-of)"
    )
    THROTTLE_ANON_REQUESTS = Tunable(120, minimum=0, doc="unauthenticated requests per window and client address")
    THROTTLE_AUTH_FAILURES = Tunable(
        30,
        minimum=0,
        doc="failed API-key authentications per window and client address; past it, 429 instead of 401",
    )


throttle_settings = ThrottleSettings()
