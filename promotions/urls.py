from django.urls import path

from promotions import apis

ACTIONS = ("approve", "reject", "apply", "pause", "resume", "supersede")

urlpatterns = [
    path("", apis.PromotionListCreateApi.as_view(), name="promotions"),
    path("scan", apis.PromotionScanApi.as_view(), name="promotions-scan"),
    path("<uuid:promotion_id>", apis.PromotionDetailApi.as_view(), name="promotion-detail"),
    path("<uuid:promotion_id>/preview", apis.PromotionPreviewApi.as_view(), name="promotion-preview"),
    *[
        path(
            f"<uuid:promotion_id>/{action}",
            apis.PromotionActionApi.as_view(action_name=action),
            name=f"promotion-{action}",
        )
        for action in ACTIONS
    ],
]
