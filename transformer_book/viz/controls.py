"""Kernel-free controls shared by the book's figures.

A plotly ``updatemenus`` entry runs in the browser, so a figure keeps its menus in the static book with no kernel.
In the static book, ``book/_ext/figures.js`` shows each menu as an HTML control above the figure (labelled with the
menu's ``name``) and hides annotations named :data:`MENU_LABEL`, the labels drawn beside plotly's own menus for
live notebooks.
"""

from __future__ import annotations

from collections.abc import Sequence

MENU_LABEL = "menu-label"  # the same name as MENU_LABEL in book/_ext/figures.js
_ANCHORS = {"xanchor": ("auto", "left", "center", "right"), "yanchor": ("auto", "top", "middle", "bottom")}


def dropdown(
    buttons: Sequence[dict],
    x: float = 0.0,
    y: float = 1.0,
    xanchor: str = "left",
    yanchor: str = "bottom",
    active: int = 0,
    name: str | None = None,
    pad: dict | None = None,
) -> dict:
    """A plotly dropdown menu (one ``layout.updatemenus`` entry) over ``buttons``, placed at ``(x, y)`` in paper
    coordinates and anchored by its ``xanchor``/``yanchor`` corner, showing entry ``active`` as selected.

    ``name`` labels the menu for tests and templates; ``pad`` (e.g. ``dict(b=30)``) leaves room around it.
    """
    buttons = list(buttons)
    if not buttons:
        raise ValueError("buttons must hold at least one menu entry; got none")
    if not 0 <= active < len(buttons):
        raise ValueError(f"active must index one of the {len(buttons)} buttons; got {active}")
    for key, value in (("xanchor", xanchor), ("yanchor", yanchor)):
        if value not in _ANCHORS[key]:
            raise ValueError(f"{key} must be one of {', '.join(_ANCHORS[key])}; got {value!r}")
    menu = dict(
        type="dropdown",
        direction="down",
        buttons=buttons,
        active=active,
        showactive=True,
        x=x,
        xanchor=xanchor,
        y=y,
        yanchor=yanchor,
    )
    if name is not None:
        menu["name"] = name
    if pad is not None:
        menu["pad"] = pad
    return menu


__all__ = ["MENU_LABEL", "dropdown"]
