from django.urls import path

from promotions.apis import promotions, scans

ACTIONS = ("approve", "reject", "apply", "pause", "resume", "supersede")

# The ledger and its scans, under /api/v1/promotions/ (the share requests: see share_urls).
urlpatterns = [
    path("", promotions.PromotionListCreateApi.as_view(), name="promotions"),
    path("scan", scans.PromotionScanApi.as_view(), name="promotions-scan"),
    path("scans", scans.ScanRunListApi.as_view(), name="promotion-scans"),
    path("scans/<uuid:scan_run_id>", scans.ScanRunDetailApi.as_view(), name="promotion-scan"),
    path("<uuid:promotion_id>", promotions.PromotionDetailApi.as_view(), name="promotion-detail"),
    path("<uuid:promotion_id>/preview", promotions.PromotionPreviewApi.as_view(), name="promotion-preview"),
    *[
        path(
            f"<uuid:promotion_id>/{action}",
            promotions.PromotionActionApi.as_view(action_name=action),
            name=f"promotion-{action}",
        )
        for action in ACTIONS
    ],
]
