#!/usr/bin/env python3
"""A terminal screen, as `tmux capture-pane -e -p` prints it (text with SGR colour sequences),
drawn as ImageMagick's MVG: a cell grid in a monospace font, each cell with its colours, bold
and underline. `convert mvg:screen.mvg screen.png` renders it.

    ansi2mvg.py COLS ROWS FONT BOLD_FONT < capture.ansi > screen.mvg

Python's standard library only; the output depends on the input alone, so the PNG is
reproducible with the same ImageMagick and fonts.
"""

import re
import sys
import unicodedata

# Neovim's default dark colours stand in for the terminal's defaults (SGR 39 and 49).
DEFAULT_FG = (0xE0, 0xE2, 0xEA)
DEFAULT_BG = (0x14, 0x16, 0x1B)
# xterm's first sixteen.
BASIC = [
    (0x00, 0x00, 0x00), (0xCD, 0x00, 0x00), (0x00, 0xCD, 0x00), (0xCD, 0xCD, 0x00),
    (0x00, 0x00, 0xEE), (0xCD, 0x00, 0xCD), (0x00, 0xCD, 0xCD), (0xE5, 0xE5, 0xE5),
    (0x7F, 0x7F, 0x7F), (0xFF, 0x00, 0x00), (0x00, 0xFF, 0x00), (0xFF, 0xFF, 0x00),
    (0x5C, 0x5C, 0xFF), (0xFF, 0x00, 0xFF), (0x00, 0xFF, 0xFF), (0xFF, 0xFF, 0xFF),
]

FONT_SIZE = 16
CELL_W = FONT_SIZE * 1233 / 2048  # DejaVu Sans Mono's advance: 1233 of 2048 units
CELL_H = 20
BASELINE = 15
PAD = 12

SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER_ESCAPE = re.compile(r"\x1b(\[[0-9;:?]*[A-Za-z]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z])")


def palette(n):
    if n < 16:
        return BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    level = 8 + 10 * (n - 232)
    return (level, level, level)


class Style:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None
        self.bg = None
        self.bold = False
        self.dim = False
        self.underline = False
        self.reverse = False

    def copy(self):
        s = Style()
        s.__dict__.update(self.__dict__)
        return s

    def apply(self, params):
        groups = params.split(";") if params else ["0"]
        i = 0
        while i < len(groups):
            sub = [int(p) if p else 0 for p in groups[i].split(":")]
            c = sub[0]
            if c in (38, 48, 58):
                if len(sub) > 1:
                    # Colon form: 38:5:N, 38:2:R:G:B or 38:2:ID:R:G:B.
                    rest = sub[1:]
                else:
                    rest = [int(p) if p else 0 for p in groups[i + 1:i + 5]]
                colour = None
                used = 0
                if rest[:1] == [5] and len(rest) >= 2:
                    colour, used = palette(rest[1]), 2
                elif rest[:1] == [2] and len(rest) >= 4:
                    rgb = rest[-3:] if len(sub) > 1 else rest[1:4]
                    colour, used = tuple(rgb), 4
                if len(sub) == 1:
                    i += used
                if c == 38 and colour:
                    self.fg = colour
                elif c == 48 and colour:
                    self.bg = colour
            elif c == 0:
                self.reset()
            elif c == 1:
                self.bold = True
            elif c == 2:
                self.dim = True
            elif c in (4, 21):
                self.underline = True
            elif c == 7:
                self.reverse = True
            elif c == 22:
                self.bold = self.dim = False
            elif c == 24:
                self.underline = False
            elif c == 27:
                self.reverse = False
            elif 30 <= c <= 37:
                self.fg = BASIC[c - 30]
            elif 90 <= c <= 97:
                self.fg = BASIC[c - 90 + 8]
            elif 40 <= c <= 47:
                self.bg = BASIC[c - 40]
            elif 100 <= c <= 107:
                self.bg = BASIC[c - 100 + 8]
            elif c == 39:
                self.fg = None
            elif c == 49:
                self.bg = None
            i += 1

    def colours(self):
        fg, bg = self.fg or DEFAULT_FG, self.bg or DEFAULT_BG
        if self.reverse:
            fg, bg = bg, fg
        if self.dim:
            fg = tuple((a + b) // 2 for a, b in zip(fg, bg))
        return fg, bg


def width(ch):
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cells(text, cols, rows):
    """The screen's rows: lists of (char, style) per column; the style carries over lines."""
    style = Style()
    screen = []
    for line in text.split("\n")[:rows]:
        row = []
        pos = 0
        while pos < len(line):
            m = SGR.match(line, pos)
            if m:
                style.apply(m.group(1))
                pos = m.end()
                continue
            m = OTHER_ESCAPE.match(line, pos)
            if m:
                pos = m.end()
                continue
            ch = line[pos]
            pos += 1
            if ch < " ":
                continue
            w = width(ch)
            if w == 0 and row:
                row[-1] = (row[-1][0] + ch, row[-1][1])
                continue
            row.append((ch, style.copy()))
            if w == 2:
                row.append(("", style.copy()))
        screen.append(row[:cols])
    while len(screen) < rows:
        screen.append([])
    return screen


def hexcolour(rgb):
    return "#%02x%02x%02x" % tuple(rgb)


def quote(text):
    # MVG strings: backslash escapes; `%` would start ImageMagick's property escapes.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + '"'


def mvg(screen, cols, rows, font, bold_font):
    w = round(PAD * 2 + cols * CELL_W)
    h = PAD * 2 + rows * CELL_H
    out = [f"viewbox 0 0 {w} {h}", "stroke none", f"fill '{hexcolour(DEFAULT_BG)}'", f"rectangle 0,0 {w},{h}"]
    out.append(f"font-size {FONT_SIZE}")
    out.append("text-antialias 1")

    def x(col):
        return PAD + col * CELL_W

    # Backgrounds first, as runs, then the characters one per cell so that they keep the grid.
    for r, row in enumerate(screen):
        top = PAD + r * CELL_H
        col = 0
        while col < len(row):
            bg = row[col][1].colours()[1]
            end = col
            while end < len(row) and row[end][1].colours()[1] == bg:
                end += 1
            if bg != DEFAULT_BG:
                out.append(f"fill '{hexcolour(bg)}'")
                out.append(f"rectangle {x(col):.2f},{top} {x(end):.2f},{top + CELL_H - 1}")
            col = end
    current_font = None
    current_fill = None
    for r, row in enumerate(screen):
        top = PAD + r * CELL_H
        for col, (ch, style) in enumerate(row):
            fg = style.colours()[0]
            if style.underline:
                out.append(f"fill '{hexcolour(fg)}'")
                current_fill = fg
                out.append(f"rectangle {x(col):.2f},{top + CELL_H - 2} {x(col + 1):.2f},{top + CELL_H - 2}")
            if not ch.strip():
                continue
            wanted = bold_font if style.bold else font
            if wanted != current_font:
                out.append(f"font '{wanted}'")
                current_font = wanted
            if fg != current_fill:
                out.append(f"fill '{hexcolour(fg)}'")
                current_fill = fg
            out.append(f"text {x(col):.2f},{top + BASELINE} {quote(ch)}")
    return "\n".join(out) + "\n"


def main():
    cols, rows, font, bold_font = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    text = sys.stdin.read()
    sys.stdout.write(mvg(cells(text, cols, rows), cols, rows, font, bold_font))


if __name__ == "__main__":
    main()
