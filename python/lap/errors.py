"""The exceptions lap raises: every failure of lap's tools and libraries."""


class LapError(RuntimeError):
    """A failure of lap's compiler, runtime or libraries, with lap's message."""


class SpecError(LapError):
    """lapc refused a spec: where (file, line, column) and why.

    ``text`` is lapc's whole report (the line, a caret, the hint)."""

    def __init__(self, file, line, column, message, text):
        super().__init__(text.strip() or message)
        self.file, self.line, self.column = file, line, column
        self.message = message
        self.text = text
