"""Which of some user names are users of this cluster: ``squeue -u``, ``scancel -u`` and
``sacct -u`` check their names as Slurm's commands do with ``getpwnam``, before they ask
for any job (an unknown name is a typo far more often than a wish to see nothing)."""

from __future__ import annotations

from django.contrib.auth import get_user_model


def user_names_known(names: list[str]) -> list[str]:
    """The names among ``names`` that are accounts here, in the order given."""
    model = get_user_model()
    field = model.USERNAME_FIELD
    known = set(model.objects.filter(**{f"{field}__in": names}).values_list(field, flat=True))
    return [name for name in names if name in known]
