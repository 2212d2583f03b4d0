from rest_framework.pagination import LimitOffsetPagination as _Base


class LimitOffsetPagination(_Base):
    """Lists page by ``limit``/``offset``; the CLI asks for everything in one page."""

    default_limit = 100
    max_limit = 100_000
