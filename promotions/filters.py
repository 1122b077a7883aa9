import django_filters

from promotions.models import LearningPromotion, PromotionPath, PromotionStatus, Scanner, ScanRun, ScanStatus


class PromotionFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=PromotionStatus.choices)
    promotion_type = django_filters.CharFilter()
    subject_type = django_filters.CharFilter()
    subject_id = django_filters.CharFilter()
    project = django_filters.CharFilter(field_name="project__slug")
    promotion_path = django_filters.ChoiceFilter(choices=PromotionPath.choices)

    class Meta:
        model = LearningPromotion
        fields: list[str] = []


class ScanRunFilter(django_filters.FilterSet):
    scanner = django_filters.ChoiceFilter(choices=Scanner.choices)
    status = django_filters.ChoiceFilter(choices=ScanStatus.choices)

    class Meta:
        model = ScanRun
        fields: list[str] = []
