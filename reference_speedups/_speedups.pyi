# The C extension's signatures (reference_speedups/_speedups.c): addresses and sizes.
def unpad(
    address: int,
    rows: int,
    width: int,
    row_stride: int,
    col_stride: int,
    itemsize: int,
    limit: int,
) -> list[list[int]]: ...
def unpad_buffer(array: object, limit: int, keep_all: bool) -> list[list[int]] | None: ...
def count_at_least(rows: int, values: int, counts: int, num_rows: int, width: int) -> None: ...
