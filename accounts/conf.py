"""The accounts app's tunables, typed and range-checked (see ``core.conf``)."""

from __future__ import annotations

from core.conf import AppSettings, Tunable


class AccountsSettings(AppSettings):
    """Declared here once; values come from Django settings or the environment."""

    API_KEY_CACHE_SECONDS = Tunable(
        10,
        minimum=0,
        maximum=3600,
        doc="resolved keys and on-behalf-of users are cached per process this long, so a revocation "
        "reaches every worker within this many seconds (0 disables the cache)",
    )
    API_KEY_LAST_USED_RESOLUTION = Tunable(
        300,
        minimum=0,
        maximum=7 * 24 * 3600,
        doc="how often a key's last_used_at is refreshed, in seconds; between refreshes a request "
        "with that key writes nothing about its use",
    )


accounts_settings = AccountsSettings()
