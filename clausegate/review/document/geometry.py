"""Plane geometry for :mod:`clausegate.review.document.graphics`: PDF matrices (``[a b c d e f]``, row-vector
convention), points, bounding boxes, and the path being built by path operators."""

from __future__ import annotations

import math
from typing import Any


def mul(m: tuple, n: tuple) -> tuple:
    a, b, c, d, e, f = m
    p, q, r, s, t, u = n
    return (a * p + b * r, a * q + b * s, c * p + d * r, c * q + d * s, e * p + f * r + t, e * q + f * s + u)


def apply(m: tuple, x: float, y: float) -> tuple[float, float]:
    return (x * m[0] + y * m[2] + m[4], x * m[1] + y * m[3] + m[5])


def bbox(points: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return (min(xs), min(ys), max(xs), max(ys))


def intersect(a: tuple | None, b: tuple | None) -> tuple | None:
    if a is None or b is None:
        return None
    box = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
    return box if box[0] <= box[2] and box[1] <= box[3] else None


def num(value: Any, default: float = 0.0) -> float:
    if value is None:
        return default
    try:
        result = float(value)
    except (TypeError, ValueError):
        return default
    return result if math.isfinite(result) else default


class Path:
    """The path being built: its points (a clip's bbox), the rectangles in it, and whether it has other shapes."""

    def __init__(self) -> None:
        self.points: list[tuple[float, float]] = []
        self.rects: list[tuple] = []
        self.irregular = False
        self._sub: list[tuple[float, float]] = []

    def add(self, point: tuple[float, float], start: bool = False) -> None:
        if start:
            self.close()
        self._sub.append(point)
        self.points.append(point)

    def curve(self, points: list[tuple[float, float]]) -> None:
        self._sub += points
        self.points += points
        self.irregular = True

    def rect(self, corners: list[tuple[float, float]]) -> None:
        self.close()
        self.points += corners
        self.rects.append(bbox(corners))

    def close(self) -> None:
        sub, self._sub = self._sub, []
        if len(sub) > 4 and abs(sub[0][0] - sub[-1][0]) < 0.01 and abs(sub[0][1] - sub[-1][1]) < 0.01:
            sub = sub[:-1]
        if len(sub) < 3:  # a point or a line encloses nothing
            return
        box = bbox(sub)

        def corner(v: float, a: float, b: float) -> bool:
            return abs(v - a) < 0.01 or abs(v - b) < 0.01

        if len(sub) == 4 and all(corner(x, box[0], box[2]) and corner(y, box[1], box[3]) for x, y in sub):
            self.rects.append(box)
        else:
            self.irregular = True
