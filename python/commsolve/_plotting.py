"""matplotlib without a display, and the one way a figure is finished: saved as a file (and
closed), or, with no path, returned to look at (the tests read the figures this way)."""

from __future__ import annotations

__all__ = ["pyplot", "finish"]


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def finish(fig, path, dpi=120):
    """Saves ``fig`` as ``path`` and closes it; with ``path`` None, returns it."""
    if path is None:
        return fig
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return None
