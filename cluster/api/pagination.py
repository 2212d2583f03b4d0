from rest_framework.pagination import LimitOffsetPagination as _Base
from rest_framework.request import Request


class LimitOffsetPagination(_Base):
    """Lists page by ``limit``/``offset``; the CLI asks for everything in one page."""

    default_limit = 100
    max_limit = 100_000
    # SQLite's OFFSET is a signed 64-bit integer: ?offset=10**30 overflowed in the driver.
    max_offset = 2**62

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), self.max_offset)
