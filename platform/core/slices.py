def even_slice(total: int, parts: int, index: int) -> tuple[int, int]:
    """Bounds of the `index`-th of `parts` contiguous slices of `total` elements.

    Slices differ in size by at most one element; the first ones are the longer.
    """
    base, extra = divmod(total, parts)
    start = index * base + min(index, extra)
    return start, start + base + (1 if index < extra else 0)
