import django_filters

from promotions.models import LearningPromotion, PromotionStatus


class PromotionFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=PromotionStatus.choices)
    promotion_type = django_filters.CharFilter()
    subject_type = django_filters.CharFilter()
    subject_id = django_filters.CharFilter()
    project = django_filters.CharFilter(field_name="project__slug")

    class Meta:
        model = LearningPromotion
        fields: list[str] = []
