from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


def _forget_cached_user(sender, instance, **kwargs) -> None:
    """A deactivated or deleted user stops being served from the auth cache of this process at once."""
    from accounts.selectors import auth_cache_forget_user  # noqa: PLC0415 - needs the app registry ready

    if instance.external_id:
        auth_cache_forget_user(external_id=instance.external_id)


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"

    def ready(self) -> None:
        from accounts import schema  # noqa: F401, PLC0415 - registers the OpenAPI auth extension; needs the app registry ready
        from accounts.models import User  # noqa: PLC0415 - needs the app registry ready

        post_save.connect(_forget_cached_user, sender=User, dispatch_uid="accounts_forget_cached_user_save")
        post_delete.connect(_forget_cached_user, sender=User, dispatch_uid="accounts_forget_cached_user_delete")
