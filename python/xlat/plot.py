"""The report's figures as matplotlib objects, for notebooks and scripts.

Every function takes the runs to draw — a frame of stored runs as :func:`xlat.results` returns
it, or the result records :func:`xlat.compare` / :func:`xlat.run` return — and gives back
``matplotlib.figure.Figure`` objects drawn by the same code as ``xlat report`` (one
implementation, two entry points): same aggregation, captions and numbers. Restyle them, show
them (a figure is a notebook cell's value) or save them (``fig.savefig("speedup.pdf")``).

Unlike ``xlat report``, nothing here changes matplotlib's global state: the report's style
(8 pt text, TrueType fonts in PDFs) is applied only while a figure is drawn, and the backend
is left as the notebook or script set it.

Examples
--------
>>> import xlat, xlat.plot
>>> recs = xlat.compare(["radix", "ideal"], "gups", footprint="16MiB", refs="20k")
>>> fig = xlat.plot.speedup(recs)
>>> round(float(fig.get_figwidth()), 2)  # a column of a two-column paper
3.33
>>> [ax.get_ylabel() for ax in fig.axes][:1]
['speedup over\\nradix (×)']
>>> sorted(xlat.plot.figures(recs, names=["walk_latency", "tlb_mpki"]))
['tlb_mpki', 'walk_latency']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from xlat.report import HOW_TO_READ, STYLE, _Data, _draw, figure_width, runs_frame

__all__ = [
    "available",
    "caption",
    "figure",
    "figures",
    "page_sizes",
    "page_table_memory",
    "speedup",
    "tlb_mpki",
    "walk_latency",
]


def available() -> dict[str, str]:
    """Every figure name the report can draw, with one line on how to read it.

    Which of them a given set of runs gets depends on the runs (e.g. ``thp_speedup`` needs a
    THP axis, ``speedup_vs_footprint`` a footprint axis).

    Examples
    --------
    >>> import xlat.plot
    >>> "speedup" in xlat.plot.available()
    True
    """
    return dict(HOW_TO_READ)


def figures(
    data,
    baseline: str | None = None,
    width: str | float | None = "column",
    names: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Draw the report's figures for ``data``; returns ``{name: Figure}`` in report order.

    ``baseline`` is the design speedups and normalized figures are relative to (default:
    ``radix`` when present); ``width`` is ``"column"`` (3.33 in), ``"page"`` (7 in) or inches;
    ``names`` restricts the drawing to those figures (see :func:`available`). A figure the
    runs cannot support (e.g. a page-walk-cache figure without radix) is absent from the
    result. The caption of each figure, which says what is plotted over which runs, is
    :func:`caption` of the figure.

    Examples
    --------
    >>> import xlat, xlat.plot
    >>> recs = xlat.compare(["radix", "ecpt"], "gups", footprint="16MiB", refs="20k")
    >>> figs = xlat.plot.figures(recs)
    >>> "speedup" in figs and "page_table_memory" in figs
    True
    >>> xlat.plot.caption(figs["page_table_memory"]).startswith("Peak page-table memory")
    True
    """
    import matplotlib.pyplot as plt

    inches = figure_width(width)
    wanted = None
    if names is not None:
        wanted = set(names)
        unknown = sorted(wanted - set(HOW_TO_READ))
        if unknown:
            raise ValueError(
                f"unknown figure {', '.join(unknown)} (figures: {', '.join(HOW_TO_READ)})"
            )
    df, baseline = runs_frame(data, baseline)
    with plt.rc_context(STYLE):
        drawn = _draw(_Data(df, baseline), None, inches, "xlat.plot", wanted)
    for name, fig in drawn.objects.items():
        # Kept with the figure so that it travels with it (savefig metadata, captions).
        fig._xlat_caption = drawn.numbers[name]["caption"]
        fig._xlat_numbers = drawn.numbers[name]
    return drawn.objects


def figure(name: str, data, baseline: str | None = None, width: str | float | None = "column"):
    """One figure of the report by name (see :func:`available`).

    Raises ``ValueError`` when the runs cannot give that figure, naming those they give.

    Examples
    --------
    >>> import xlat, xlat.plot
    >>> recs = xlat.compare(["radix", "ideal"], "gups", footprint="16MiB", refs="20k")
    >>> xlat.plot.figure("walks", recs).axes[0].get_ylabel()
    'page-walk cycles\\n(normalized to radix)'
    """
    figs = figures(data, baseline, width, names=[name])
    if name not in figs:
        possible = sorted(figures(data, baseline, width))
        raise ValueError(f"these runs give no '{name}' figure (they give: {', '.join(possible)})")
    return figs[name]


def caption(fig) -> str:
    """The caption of a figure drawn here: what is plotted, over which runs, and how seeds and
    workloads are aggregated (the same text as under the figure in ``xlat report``).

    Examples
    --------
    >>> import xlat, xlat.plot
    >>> recs = xlat.compare(["radix", "ideal"], "gups", footprint="16MiB", refs="20k")
    >>> "geometric mean" in xlat.plot.caption(xlat.plot.speedup(recs))
    True
    """
    return getattr(fig, "_xlat_caption", "")


def speedup(data, baseline: str | None = None, width: str | float | None = "column"):
    """Speedup of every design over ``baseline`` per workload, with the geometric mean over
    the workloads of each setting (a panel per setting of the swept axes).

    Examples
    --------
    >>> import xlat, xlat.plot
    >>> recs = xlat.compare(["radix", "perfect_tlb"], "gups", footprint="16MiB", refs="20k")
    >>> fig = xlat.plot.speedup(recs)
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['gups', 'geomean']
    """
    return figure("speedup", data, baseline, width)


def walk_latency(data, baseline: str | None = None, width: str | float | None = "column"):
    """Where a page walk's cycles go: per design, the latency of its page-table references
    per walk, stacked by the level that served them (page-walk cache hits are not drawn).

    Examples
    --------
    >>> import xlat, xlat.plot
    >>> recs = xlat.compare(["radix", "ecpt"], "gups", footprint="16MiB", refs="20k")
    >>> len(xlat.plot.walk_latency(recs).axes)  # a panel per workload and setting
    1
    """
    return figure("walk_cycles_by_level", data, baseline, width)


def page_table_memory(data, baseline: str | None = None, width: str | float | None = "column"):
    """Peak page-table memory per design and workload, in KiB (log scale when the designs
    differ by more than 30x).

    Examples
    --------
    >>> import xlat, xlat.plot
    >>> recs = xlat.compare(["radix", "ecpt"], "gups", footprint="16MiB", refs="20k")
    >>> xlat.plot.page_table_memory(recs).axes[0].get_ylabel()
    'peak page-table\\nmemory (KiB)'
    """
    return figure("page_table_memory", data, baseline, width)


def tlb_mpki(data, baseline: str | None = None, width: str | float | None = "column"):
    """L1 and L2 TLB misses per kilo-instruction, once per workload (the TLBs are the same for
    every design; where designs differ, as with coalescing TLBs, a bar per design).

    Examples
    --------
    >>> import xlat, xlat.plot
    >>> recs = xlat.compare(["radix", "ideal"], "gups", footprint="16MiB", refs="20k")
    >>> xlat.plot.tlb_mpki(recs).axes[0].get_title(loc="left") != "x"
    True
    """
    return figure("tlb_mpki", data, baseline, width)


def page_sizes(data, baseline: str | None = None, width: str | float | None = "column"):
    """L2 TLB misses per kilo-instruction stacked by the size of the page each walk found: the
    page-size distribution behind the misses.

    Examples
    --------
    >>> import xlat, xlat.plot
    >>> recs = xlat.compare(["radix"], "gups", footprint="64MiB", refs="100k")
    >>> fig = xlat.plot.page_sizes(recs)
    >>> [t.get_text() for t in fig.legends[0].get_texts()]
    ['4\xa0KiB', 'fault']
    """
    return figure("tlb_misses_by_page_size", data, baseline, width)
