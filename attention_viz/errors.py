"""The base of the errors the app shows as a translated message: a stable ``code`` and the message's fields.

The English message (for the command line and the log) is the exception's text; the app looks up its own
words by ``code`` in every locale and fills them with ``fields``.
"""

from __future__ import annotations


class CodedError(Exception):
    """An error with a stable id of its case; subclasses name their cases and set :attr:`default_code`.

    Attributes:
        code: the case, ``default_code`` when none is given.
        fields: what the translated message needs (empty when nothing).
    """

    default_code = "invalid"

    def __init__(self, message: str, code: str | None = None, **fields: object) -> None:
        super().__init__(message)
        self.code = self.default_code if code is None else code
        self.fields = fields
