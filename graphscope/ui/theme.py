"""Themes as data: the colours of the canvas and the window (light, dark, high contrast).

A ``Theme`` is a plain frozen dataclass of ``#rrggbb`` strings (plus the name of a
pygments style for the editor), so the same object drives the graph canvas, the
exported SVG/PNG and the window stylesheet (``stylesheet(theme, scale)``), and can be
tested without a screen. Nothing here imports Qt.

NOTE [colour-blind-safe]: the meaning-bearing colours come from the Okabe-Ito
palette (blue #0072B2 / sky #56B4E9 for "tracked by autograd", orange #E69F00 for
"not tracked", vermillion #D55E00 for errors, reddish purple / yellow for the
current node), which stays distinct under the common colour-vision deficiencies.
Colour is never the only cue: the canvas also dashes no-grad edges, hatches and
tags no-grad tensors, badges requires_grad leaves and marks errors with "!".

In the dark themes the "missing requires_grad" warning is a pale amber, clearly
lighter than the orange of every untracked tensor (it was the same orange, so a
flagged leaf looked like any other tensor outside the graph), and the tracked and
untracked fills are saturated enough to tell apart as plain swatches (legend).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

# Okabe-Ito
OI_BLACK = "#000000"
OI_ORANGE = "#E69F00"
OI_SKY = "#56B4E9"
OI_GREEN = "#009E73"
OI_YELLOW = "#F0E442"
OI_BLUE = "#0072B2"
OI_VERMILLION = "#D55E00"
OI_PURPLE = "#CC79A7"


@dataclass(frozen=True)
class Theme:
    """Every colour the UI uses, by role. Hex strings; ``#rrggbbaa`` where alpha matters."""
    name: str
    title: str
    pygments_style: str
    dark: bool
    # window
    window_bg: str
    panel_bg: str
    text: str
    text_muted: str
    border: str
    accent: str
    selection_bg: str
    selection_text: str
    # canvas background
    canvas_bg: str
    grid: str
    # tensors
    tracked_fill: str        # tensor that autograd tracks (requires_grad / grad_fn)
    tracked_border: str
    untracked_fill: str      # tensor outside the graph
    untracked_border: str
    hatch: str               # hatch lines over untracked tensors
    leaf_border: str         # thick border of requires_grad leaves
    badge_bg: str
    badge_text: str
    param_badge_bg: str
    # ops
    op_fill: str
    op_nograd_fill: str
    op_border: str
    node_text: str
    node_detail: str
    # edges
    edge: str                # data edge (tracked)
    edge_nograd: str         # dashed
    edge_detach: str         # broken, with scissors
    # marks
    error: str
    error_text: str
    error_fill: str          # tensor/op where the error was raised
    warning: str
    branch: str
    region_fill: str         # grad-disabled region box (with alpha)
    region_border: str
    region_text: str
    inference_fill: str      # inference_mode region box
    # stepping
    current: str             # current node glow / ring
    highlight: str           # other highlighted nodes
    grad_label_bg: str
    grad_label_text: str
    grad_label_border: str
    # overlay colour (with alpha) outside the spotlight: light enough that a dimmed
    # node's name stays at 4.5:1 or more (at 50% it read at 2.4:1 on a projector)
    spotlight_dim: str
    selection: str           # selected node ring
    warning_text: str = "#000000"   # the "?" on a warning triangle

    def color(self, role: str) -> str:
        """The colour of ``role`` (a field name)."""
        return getattr(self, role)


LIGHT = Theme(
    name="light", title="Light", pygments_style="default", dark=False,
    window_bg="#F6F7F9", panel_bg="#FFFFFF", text="#1B1F24", text_muted="#5B6470",
    border="#C9CED6", accent=OI_BLUE, selection_bg="#CFE3F3", selection_text="#0B1F33",
    canvas_bg="#FFFFFF", grid="#EEF0F3",
    tracked_fill="#DCEBF7", tracked_border=OI_BLUE,
    untracked_fill="#FBEBD0", untracked_border="#8A5A00", hatch="#D2A456",
    leaf_border="#004A75", badge_bg=OI_BLUE, badge_text="#FFFFFF", param_badge_bg=OI_GREEN,
    op_fill="#F1F3F6", op_nograd_fill="#FBF3E6", op_border="#6B7480",
    node_text="#111418", node_detail="#4A525C",
    edge="#2F5F8A", edge_nograd="#B07A10", edge_detach=OI_VERMILLION,
    error=OI_VERMILLION, error_text="#FFFFFF", error_fill="#FAD4BF", warning="#E69F00", branch=OI_PURPLE,
    region_fill="#E69F0026", region_border="#C08400", region_text="#7A4F00",
    inference_fill="#CC79A726",
    current="#B0307A", highlight=OI_PURPLE,
    grad_label_bg="#FFFBE0", grad_label_text="#1B1F24", grad_label_border="#B0307A",
    # a light veil: the current node's glow already draws the eye, and a heavier one
    # left the subtitles ("scalar float32") at 3.3:1 on a projector (visual review)
    spotlight_dim="#FFFFFF28", selection=OI_GREEN,
)

DARK = Theme(
    name="dark", title="Dark", pygments_style="one-dark", dark=True,
    window_bg="#1E2127", panel_bg="#24282F", text="#E6E8EB", text_muted="#9AA3AE",
    border="#3A404A", accent=OI_SKY, selection_bg="#2F4A63", selection_text="#FFFFFF",
    canvas_bg="#1A1D22", grid="#23272E",
    tracked_fill="#1C4B75", tracked_border=OI_SKY,
    untracked_fill="#4E3A10", untracked_border="#D08A00", hatch="#7A5A26",
    leaf_border="#A9DBFA", badge_bg=OI_SKY, badge_text="#0B1620", param_badge_bg="#35C29A",
    op_fill="#2A2F37", op_nograd_fill="#332B1E", op_border="#8C96A3",
    node_text="#F2F4F6", node_detail="#B4BDC8",
    edge="#6FA8D6", edge_nograd="#D19A2A", edge_detach="#FF7A3D",
    error="#FF6A2B", error_text="#140800", error_fill="#5A2410", warning="#FFD27F", branch="#E59CC6",
    region_fill="#E69F0030", region_border="#C9962E", region_text="#F2C46A",
    inference_fill="#CC79A733",
    current=OI_YELLOW, highlight="#E59CC6",
    grad_label_bg="#2B2A17", grad_label_text="#FFF7B0", grad_label_border=OI_YELLOW,
    spotlight_dim="#00000028", selection="#35C29A",
)

# For projectors and low vision: black ground, pure white text, saturated colours,
# thick lines. Contrast of text on every fill is above 7:1.
HIGH_CONTRAST = Theme(
    name="high-contrast", title="High contrast", pygments_style="github-dark", dark=True,
    window_bg="#000000", panel_bg="#000000", text="#FFFFFF", text_muted="#E0E0E0",
    border="#FFFFFF", accent=OI_YELLOW, selection_bg="#FFFFFF", selection_text="#000000",
    canvas_bg="#000000", grid="#1A1A1A",
    tracked_fill="#004777", tracked_border="#7CC8FF",
    untracked_fill="#4D3300", untracked_border="#F29A00", hatch="#A87400",
    leaf_border="#FFFFFF", badge_bg="#7CC8FF", badge_text="#000000", param_badge_bg="#3DE0B0",
    op_fill="#000000", op_nograd_fill="#1F1500", op_border="#FFFFFF",
    node_text="#FFFFFF", node_detail="#E8E8E8",
    edge="#7CC8FF", edge_nograd="#FFB000", edge_detach="#FF5C1A",
    error="#FF5C1A", error_text="#000000", error_fill="#4A1500", warning="#FFE2A6", branch="#FF9AD5",
    region_fill="#FFB00038", region_border="#FFB000", region_text="#FFD266",
    inference_fill="#FF9AD538",
    current="#FFFF00", highlight="#FF9AD5",
    grad_label_bg="#000000", grad_label_text="#FFFF00", grad_label_border="#FFFF00",
    spotlight_dim="#00000040", selection="#3DE0B0",
)

THEMES: dict[str, Theme] = {t.name: t for t in (LIGHT, DARK, HIGH_CONTRAST)}
DEFAULT_THEME = "light"


def get_theme(name: str | None) -> Theme:
    """Theme by name (``light``, ``dark``, ``high-contrast``; ``high_contrast`` also works)."""
    if not name:
        return THEMES[DEFAULT_THEME]
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    try:
        return THEMES[key]
    except KeyError:
        raise KeyError(f"unknown theme {name!r}; choose one of {', '.join(THEMES)}") from None


def theme_names() -> list[str]:
    return list(THEMES)


def with_overrides(theme: Theme, **colours) -> Theme:
    """A copy of ``theme`` with some roles changed (user settings, tests)."""
    known = {f.name for f in fields(Theme)}
    unknown = set(colours) - known
    if unknown:
        raise KeyError(f"unknown theme roles: {sorted(unknown)}")
    return replace(theme, **colours)


def _rgba(hex_colour: str) -> str:
    """``#rrggbbaa`` -> ``rgba(r, g, b, a)`` for Qt stylesheets (which read #aarrggbb)."""
    h = hex_colour.lstrip("#")
    if len(h) == 8:
        r, g, b, a = (int(h[i:i + 2], 16) for i in (0, 2, 4, 6))
        return f"rgba({r}, {g}, {b}, {a})"
    return "#" + h


def base_font_pt(scale: float = 1.0) -> float:
    """The window's body text size in points at text scale ``scale``."""
    return round(10.0 * max(0.5, float(scale)), 1)


_STYLESHEET = """
QWidget {{ background-color: {window_bg}; color: {text}; font-size: {pt}pt; }}
QMainWindow::separator {{ background: {border}; width: {sep}px; height: {sep}px; }}
QPlainTextEdit, QTextEdit, QListView, QTreeView, QTableView, QLineEdit, QComboBox, QSpinBox {{
    background-color: {panel_bg}; color: {text}; border: 1px solid {border};
    selection-background-color: {selection_bg}; selection-color: {selection_text};
}}
QToolBar {{ background: {window_bg}; border: none; spacing: {pad}px; }}
QToolButton, QPushButton {{
    background: {panel_bg}; color: {text}; border: 1px solid {border};
    border-radius: 4px; padding: {pad}px {pad2}px;
}}
QToolButton:hover, QPushButton:hover {{ border-color: {accent}; }}
QToolButton:checked, QPushButton:checked {{ background: {selection_bg}; color: {selection_text}; }}
QPushButton:default {{ border: 2px solid {accent}; }}
QToolButton:disabled, QPushButton:disabled {{ color: {disabled_text}; background: {window_bg}; }}
QTabBar::tab {{ background: {window_bg}; color: {text_muted}; padding: {pad}px {pad2}px;
    border: 1px solid {border}; border-bottom: none; }}
QTabBar::tab:selected {{ background: {panel_bg}; color: {text}; border-top: 2px solid {accent}; }}
QDockWidget::title {{ background: {window_bg}; color: {text}; padding: {pad}px; }}
QHeaderView::section {{ background: {window_bg}; color: {text}; border: 1px solid {border}; padding: {pad}px; }}
QSlider::groove:horizontal {{ height: {groove}px; background: {border}; border-radius: {groove_r}px; }}
QSlider::handle:horizontal {{ background: {accent}; width: {handle}px; margin: -{handle_m}px 0; border-radius: {handle_r}px; }}
QSlider::sub-page:horizontal {{ background: {accent}; border-radius: {groove_r}px; }}
QStatusBar {{ color: {text_muted}; }}
QToolTip {{ background-color: {panel_bg}; color: {text}; border: 1px solid {accent}; padding: {pad}px; font-size: {pt}pt; }}
QLabel[role="error"] {{ color: {error}; font-weight: bold; }}
QLabel[role="muted"] {{ color: {text_muted}; }}
QMenu {{ background: {panel_bg}; color: {text}; border: 1px solid {border}; }}
QMenu::item:selected {{ background: {selection_bg}; color: {selection_text}; }}
QScrollBar:vertical {{ background: {window_bg}; width: {bar}px; margin: 0; border: none; }}
QScrollBar:horizontal {{ background: {window_bg}; height: {bar}px; margin: 0; border: none; }}
QScrollBar::handle:vertical {{ background: {bar_handle}; min-height: {bar_min}px; border-radius: {bar_r}px; margin: 2px; }}
QScrollBar::handle:horizontal {{ background: {bar_handle}; min-width: {bar_min}px; border-radius: {bar_r}px; margin: 2px; }}
QScrollBar::add-line, QScrollBar::sub-line {{ width: 0; height: 0; border: none; background: none; }}
QScrollBar::add-page, QScrollBar::sub-page {{ background: none; }}
"""


def stylesheet(theme: Theme, scale: float = 1.0) -> str:
    """The Qt stylesheet for the window in ``theme`` with every text scaled by ``scale``."""
    s = max(0.5, float(scale))
    hc = theme.name == "high-contrast"
    values = {f.name: _rgba(getattr(theme, f.name)) for f in fields(Theme)
              if isinstance(getattr(theme, f.name), str) and getattr(theme, f.name).startswith("#")}
    values.update(
        pt=base_font_pt(s), pad=round(3 * s), pad2=round(8 * s), sep=2 if hc else 1,
        groove=round(6 * s), groove_r=round(3 * s), handle=round(16 * s),
        handle_m=round(5 * s), handle_r=round(8 * s),
        # a disabled button's text: muted, and in high contrast (whose muted text
        # is nearly white) a plain grey, still 8:1 on black
        disabled_text="#A0A0A0" if hc else values["text_muted"],
        # scroll bars drawn by the theme: the style's own were black on black in
        # high contrast (the banner's, visual review)
        bar=round(12 * s), bar_min=round(24 * s), bar_r=round(4 * s),
        bar_handle="#A0A0A0" if hc else values["border"],
    )
    return _STYLESHEET.format(**values)
