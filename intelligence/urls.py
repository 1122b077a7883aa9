from django.urls import path

from intelligence.apis import attribution, targets

# Project intelligence, under /api/v1/intelligence/.
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
    # --- end of targets and attribution ---
]
