"""matplotlib for the tools' figures (showcase.py, trace_report.py), without a display."""


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only); raises ImportError without matplotlib,
    which the callers report as figures skipped or as an error."""
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    return plt
