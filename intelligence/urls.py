"""Project intelligence's API, under /api/v1/intelligence/."""

from django.urls import path

from intelligence.apis import cards, packets, reviews

urlpatterns = [
    # --- the packet/card loop and the card-review queue ------------------------------------------
    path("projects/<slug:project_slug>/packet", packets.PacketCurrentApi.as_view(), name="intelligence-packet"),
    path("cards/<uuid:card_id>", cards.CardDetailApi.as_view(), name="intelligence-card"),
    path("cards/<uuid:card_id>/feedback", cards.CardFeedbackApi.as_view(), name="intelligence-card-feedback"),
    path("cards/<uuid:card_id>/edit", cards.CardEditApi.as_view(), name="intelligence-card-edit"),
    path("cards/<uuid:card_id>/merge", cards.CardMergeApi.as_view(), name="intelligence-card-merge"),
    path("reviews", reviews.ReviewListApi.as_view(), name="intelligence-reviews"),
    *[
        path(
            f"reviews/<uuid:review_id>/{decision}",
            reviews.ReviewDecisionApi.as_view(decision=decision),
            name=f"intelligence-review-{decision}",
        )
        for decision in ("approve", "reject")
    ],
]
