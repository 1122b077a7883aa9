from django.urls import path

from promotions.apis import promotions, scans

ACTIONS = ("approve", "reject", "apply", "pause", "resume", "supersede")

# The ledger and its scans, under /api/v1/ (the share requests: see share_urls). Like every API path,
# none ends with a slash: /api/v1/promotions/ is a 404 that names /api/v1/promotions (config/handlers.py).
urlpatterns = [
    path("promotions", promotions.PromotionListCreateApi.as_view(), name="promotions"),
    path("promotions/scan", scans.PromotionScanApi.as_view(), name="promotions-scan"),
    path("promotions/scans", scans.ScanRunListApi.as_view(), name="promotion-scans"),
    path("promotions/scans/<uuid:scan_run_id>", scans.ScanRunDetailApi.as_view(), name="promotion-scan"),
    path("promotions/<uuid:promotion_id>", promotions.PromotionDetailApi.as_view(), name="promotion-detail"),
    path("promotions/<uuid:promotion_id>/preview", promotions.PromotionPreviewApi.as_view(), name="promotion-preview"),
    *[
        path(
            f"promotions/<uuid:promotion_id>/{action}",
            promotions.PromotionActionApi.as_view(action_name=action),
            name=f"promotion-{action}",
        )
        for action in ACTIONS
    ],
]
