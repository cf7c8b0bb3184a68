"""A recording's frames become one animated PNG, every frame kept, in order."""

from __future__ import annotations

import io

from PIL import Image

from cleanroom.rollouts.osworld_controller import write_animation


def _frame(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 4), colour).save(out, format="PNG")
    return out.getvalue()


def test_the_frames_are_written_as_one_animated_png_in_order() -> None:
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]

    written = write_animation([_frame(c) for c in colours], interval_s=0.5)

    image = Image.open(io.BytesIO(written))
    assert image.format == "PNG" and getattr(image, "n_frames", 1) == 3
    seen = []
    for index in range(3):
        image.seek(index)
        seen.append(image.convert("RGB").getpixel((0, 0)))
        assert image.info["duration"] == 500
    assert seen == colours
