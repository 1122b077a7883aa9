from django.apps import AppConfig


class IntelligenceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "intelligence"
    verbose_name = "Project intelligence"

    def ready(self) -> None:
        # Every imported document with a project is compiled at once, and every one without is
        # attributed, in the import's transaction (retrieval sits below this app, so it calls the
        # listeners registered here instead of naming them).
        from intelligence.services.compile import documents_changed_compile  # noqa: PLC0415  apps load first
        from intelligence.services.jobs import documents_changed_queue_attribution  # noqa: PLC0415
        from retrieval.hooks import documents_changed_listen  # noqa: PLC0415

        documents_changed_listen("signal_extraction", documents_changed_compile)
        documents_changed_listen("intelligence.attribution", documents_changed_queue_attribution)
