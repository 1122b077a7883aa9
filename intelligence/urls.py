"""Project intelligence's API, under /api/v1/intelligence/."""

from django.urls import path

from intelligence.apis import attribution, cards, packets, reviews, targets

urlpatterns = [
    # --- targets and attribution ---
    path("targets", targets.TargetListCreateApi.as_view(), name="intelligence-targets"),
    path("targets/<int:target_id>", targets.TargetDetailApi.as_view(), name="intelligence-target"),
    path("attribution/candidates", attribution.CandidateListApi.as_view(), name="attribution-candidates"),
    path(
        "attribution/candidates/<int:candidate_id>",
        attribution.CandidateDetailApi.as_view(),
        name="attribution-candidate",
    ),
    *[
        path(
            f"attribution/candidates/<int:candidate_id>/{decision}",
            attribution.CandidateDecisionApi.as_view(decision=decision),
            name=f"attribution-candidate-{decision}",
        )
        for decision in ("approve", "reject", "correct")
    ],
    # --- the packet/card loop and the card-review queue ---
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
