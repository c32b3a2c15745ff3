import pytest

# Shared assertion helpers: rewritten like test modules, so their failures show the values.
pytest.register_assert_rewrite("tests.service.helpers")
