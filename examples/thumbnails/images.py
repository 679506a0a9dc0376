"""Just enough of an image format for the example: binary PGM (greyscale), in pure Python.

A real app would use Pillow; the example keeps to the standard library so that it runs
anywhere pqueue does, and so that its handler is honest pure-Python CPU work.
"""

from __future__ import annotations

from pathlib import Path


def write_pgm(path: Path, width: int, height: int, seed: int = 0) -> None:
    """A ``width`` x ``height`` test pattern (diagonal stripes shifted by ``seed``)."""
    row = bytes((x * 3 + seed) % 256 for x in range(width + height))
    pixels = b"".join(row[y : y + width] for y in range(height))
    path.write_bytes(b"P5\n%d %d\n255\n" % (width, height) + pixels)


def read_pgm(path: Path) -> tuple[int, int, bytes]:
    """``(width, height, pixels)`` of a binary PGM written by :func:`write_pgm`."""
    data = path.read_bytes()
    magic, size, maxval, pixels = data.split(b"\n", 3)
    if magic != b"P5" or maxval != b"255":
        raise ValueError(f"{path}: not an 8-bit binary PGM")
    width, height = (int(n) for n in size.split())
    return width, height, pixels


def shrink(width: int, height: int, pixels: bytes, longest: int) -> tuple[int, int, bytes]:
    """Box-filter the image down so that its longer side is at most ``longest`` pixels."""
    step = max(1, -(-max(width, height) // longest))  # ceil division
    out_w, out_h = width // step, height // step
    out = bytearray(out_w * out_h)
    area = step * step
    for oy in range(out_h):
        for ox in range(out_w):
            total = 0
            for y in range(oy * step, oy * step + step):
                start = y * width + ox * step
                for value in pixels[start : start + step]:  # per pixel, as a real filter would
                    total += value
            out[oy * out_w + ox] = total // area
    return out_w, out_h, bytes(out)
