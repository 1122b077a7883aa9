from django.apps import AppConfig


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"

    def ready(self) -> None:
        from accounts import schema  # noqa: F401, PLC0415 - registers the OpenAPI auth extension; needs the app registry ready
