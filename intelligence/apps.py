from django.apps import AppConfig


class IntelligenceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "intelligence"
    verbose_name = "Project intelligence"

    def ready(self) -> None:
        # Every imported document with a project is compiled; retrieval calls this without importing us.
        from intelligence.services.compile import documents_changed_compile  # noqa: PLC0415
        from retrieval.hooks import documents_changed_listen  # noqa: PLC0415

        documents_changed_listen("signal_extraction", documents_changed_compile)
