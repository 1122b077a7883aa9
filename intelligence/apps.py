from django.apps import AppConfig


class IntelligenceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "intelligence"
    verbose_name = "Project intelligence"

    def ready(self) -> None:
        # Every imported or changed document is attributed (retrieval sits below this app, so it
        # calls the listeners registered here instead of naming them).
        from intelligence.services.jobs import documents_changed_queue_attribution  # noqa: PLC0415  apps load first
        from retrieval.hooks import documents_changed_listen  # noqa: PLC0415

        documents_changed_listen("intelligence.attribution", documents_changed_queue_attribution)
