"""Procedural Gaussians and cameras for kernel tests, with the edge cases the kernels must handle.

Kernel tests import no renderer code (the kernels sit below it): the cameras here are packed into the kernels'
[24] layout directly, and the covariances are built from tests/analytic.py's rotations, not from
`prepare_covariances`. The cameras have fx != fy and a principal point off the image centre, so that a
projection that mixes up fx and fy, or cx and cy, differs from its twin.
"""

from __future__ import annotations

import math

import numpy as np
import torch

import kernels
import kernels.reference as ref
from kernels.buffers import pack_entries, unpack_entries
from kernels.constants import MACRO_COLS, MACRO_ROWS
from tests.analytic import covariance, quat_matrix, upper


def look_at(eye, target, up=(0.0, -1.0, 0.0)) -> np.ndarray:
    """[4, 4] T_world_camera (OpenCV axes: +Z towards `target`, +Y down the image, as close to -`up` as the
    view allows), by Gram-Schmidt."""
    eye = np.asarray(eye, dtype=np.float64)
    forward = np.asarray(target, dtype=np.float64) - eye
    forward /= np.linalg.norm(forward)
    down = -np.asarray(up, dtype=np.float64)
    down -= (down @ forward) * forward
    assert np.linalg.norm(down) > 1e-6, "look_at: the view direction is parallel to up"
    down /= np.linalg.norm(down)
    T = np.eye(4)
    T[:3, :3] = np.stack([np.cross(down, forward), down, forward], axis=1)
    T[:3, 3] = eye
    return T


class PinholeCamera:
    """A pinhole camera in pixels (pixel centres at +0.5) with a camera-to-world pose, as the kernels take it."""

    def __init__(self, width: int, height: int, fx: float, fy: float, cx: float, cy: float, T_world_camera=None):
        self.width, self.height, self.fx, self.fy, self.cx, self.cy = width, height, fx, fy, cx, cy
        self.T_world_camera = np.eye(4) if T_world_camera is None else np.asarray(T_world_camera, dtype=np.float64)

    @property
    def position(self) -> np.ndarray:
        return np.asarray(self.T_world_camera, dtype=np.float64)[:3, 3].copy()

    def packed(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """[24] f32: viewmat (world-to-camera) row-major [16], fx, fy, cx, cy, camera centre [3], pad (the
        layout kernels/project.py documents)."""
        v = np.zeros(24)
        v[:16] = np.linalg.inv(np.asarray(self.T_world_camera, dtype=np.float64)).reshape(-1)
        v[16:20] = (self.fx, self.fy, self.cx, self.cy)
        v[20:23] = self.position
        return torch.tensor(v, dtype=torch.float32, device=device)


def camera(width: int, height: int, fov_y_deg: float = 60.0, pose: np.ndarray | None = None) -> PinholeCamera:
    """A camera at (0.3, -0.2, -4) looking at the origin, -Y up (INRIA convention), about `fov_y_deg` high: its
    pixels are not square (fx = 1.12 f, fy = 0.93 f) and its principal point is off centre (0.44 w, 0.57 h)."""
    f = 0.5 * height / math.tan(math.radians(fov_y_deg) / 2)
    pose = look_at((0.3, -0.2, -4.0), (0, 0, 0)) if pose is None else pose
    return PinholeCamera(width, height, 1.12 * f, 0.93 * f, 0.44 * width, 0.57 * height, pose)


def gaussians(n: int, *, sh_degree: int = 0, seed: int = 0, device: str = "cpu", edge_cases: bool = True):
    """(means [N,3], covars [N,6], opacities [N], sh [N,K,3]) with random trained-like values; the SH in
    kernels.SH_DTYPE (fp16), the dtype `project_gaussians` takes (the renderer's prepared copy).

    With edge_cases, the first rows are: behind the camera, exactly at the near plane, far off-screen,
    huge, needle-thin, nearly transparent (below 1/255), and fully opaque.
    """
    g = torch.Generator().manual_seed(seed)
    means = (torch.rand(n, 3, generator=g) - 0.5) * torch.tensor([3.0, 2.4, 2.0])
    quats = torch.randn(n, 4, generator=g)
    log_scales = torch.randn(n, 3, generator=g) * 0.6 - 3.3
    opac = torch.rand(n, generator=g) * 0.98 + 0.02
    k = (sh_degree + 1) ** 2
    sh = torch.randn(n, k, 3, generator=g) * torch.tensor([1.0] + [0.3] * (k - 1))[None, :, None]
    if edge_cases and n >= 8:
        eye = torch.tensor([0.3, -0.2, -4.0])
        fwd = -eye / eye.norm()
        means[0] = eye - fwd * 1.0  # behind the camera
        means[1] = eye + fwd * 0.01  # exactly at the near plane (z = near)
        means[2] = torch.tensor([40.0, 0.0, 0.0])  # far off-screen
        log_scales[3] = torch.tensor([0.2, 0.1, 0.3])  # huge: covers the whole image
        means[3] = torch.tensor([0.0, 0.0, 1.0])
        log_scales[4] = torch.tensor([-0.5, -9.0, -9.0])  # needle-thin
        opac[5] = 0.5 / 255.0  # below the alpha threshold: culled
        opac[6] = 1.0  # fully opaque
        log_scales[6] = torch.tensor([-1.5, -1.5, -1.5])
    R = quat_matrix(quats.double().numpy())
    covars = torch.from_numpy(upper(covariance(R, np.exp(log_scales.double().numpy())))).float()
    return (means.to(device), covars.to(device), opac.to(device), sh.to(device, kernels.SH_DTYPE))


def projected(n, width, height, device, seed=0, degree=0, tile=8, grow=0.0):
    """Stage 1's outputs (records, depths, tiles_touched, macros_touched, bin_t) for `gaussians(n)` seen by
    `camera`, from the torch twin: the input the later stages' tests start from, so that they test their own
    stage only. grow > 0 scales every Gaussian's axes by e^grow (larger footprints, more macro-tiles each)."""
    means, covars, opac, sh = gaussians(n, sh_degree=degree, seed=seed, device=device)
    covars = covars * math.exp(2 * grow)
    cam = camera(width, height).packed(device)
    return ref.project_gaussians(means, covars, opac, sh, cam, width, height, sh_degree=degree, tile_size=tile)


def tile_grid(width: int, height: int, tile: int) -> tuple[int, int]:
    """(n_tx, n_ty): the tiles across and down an image."""
    return -(-width // tile), -(-height // tile)


def random_keys(n_tiles, n, device, dtype=torch.int16, seed=0):
    """(keys [n], ids [n] i32) of random tile pairs: tile ids below n_tiles, the last 3 the unused-slot sentinel,
    and ids a random permutation (so that an order among equal keys shows)."""
    g = torch.Generator().manual_seed(seed)
    keys = kernels.tile_keys(torch.randint(0, n_tiles, (n,), generator=g), dtype)
    keys[-3:] = kernels.sentinel_key(dtype)  # unused slots sort last
    return keys.to(device), torch.randperm(n, generator=g).to(torch.int32).to(device)


def tied_depths(n, generator, spread=64):
    """[n] f32 depths within `spread` float steps of 1.0 (bit patterns 0x3F800000 + [0, spread)): keys that keep a
    few macro-tiles' depth bits (`depth_bits`: 26-27, with 1-2 shifted away) round them into runs of equal keys
    whose exact depths differ, and some Gaussians share a depth exactly (ties by index)."""
    raw = 0x3F800000 + torch.randint(0, spread, (n,), generator=generator, dtype=torch.int32)
    return raw.view(torch.float32)


def random_pairs(n_tx, n_ty, n, device, seed=0, macros=None, spread=64):
    """(keys [n] i32, entries [n] i64, depths [n] f32) of random macro-tile pairs over an n_tx x n_ty tile grid, as
    `bin_pairs` writes them: macro-tiles below `macros` (default: all of the grid's) above their Gaussians'
    rounded depths, the last 3 the unused-slot sentinel; entries pack ids, a random permutation (so that an order
    among equal keys shows), and random masks of the tiles of the pair's macro-tile that lie in the image (bit 31
    included; a tenth of them empty, as a hull's column may be); depths `tied_depths`. The sentinel slots' masks
    are random too: nothing may read them."""
    g = torch.Generator().manual_seed(seed)
    n_mx, n_my = kernels.macro_grid(n_tx, n_ty)
    keys = torch.randint(0, n_mx * n_my if macros is None else macros, (n,), generator=g)
    masks = torch.randint(0, 1 << 32, (n,), generator=g, dtype=torch.int64)
    bit = torch.arange(MACRO_COLS * MACRO_ROWS)
    tx = (keys % n_mx)[:, None] * MACRO_COLS + bit % MACRO_COLS  # [n, 32] each bit's tile
    ty = (keys // n_mx)[:, None] * MACRO_ROWS + bit // MACRO_COLS
    in_image = ((tx < n_tx) & (ty < n_ty)).long() << bit  # [n, 32] the bits real binning may set
    masks &= in_image.sum(1)
    masks[torch.rand(n, generator=g) < 0.1] = 0
    ids = torch.randperm(n, generator=g)
    depths = tied_depths(n, g, spread)
    bits = kernels.depth_bits(n_mx * n_my)
    keys = (keys.to(torch.int32) << bits) | kernels.depth_keys(depths, bits)[ids]
    keys[-3:] = kernels.sentinel_key(torch.int32)  # unused slots sort last
    masks[-3:] = torch.randint(1, 1 << 32, (3,), generator=g, dtype=torch.int64)
    return keys.to(device), pack_entries(ids, masks).to(device), depths.to(device)


def exact_order_holds(keys, entries, depths, bits) -> bool:
    """Whether sorted macro-tile pairs are in (macro-tile, depth, Gaussian index) order, gsplat's: macro-tiles
    ascending, and within one the Gaussians' (depth, index) strictly ascending, the sentinels last. Checked from
    the depths themselves, not from the keys' rounding."""
    real = keys != kernels.sentinel_key(torch.int32)
    ids = unpack_entries(entries[real])[0]
    unit = keys[real].long() >> bits
    exact = (depths[ids].contiguous().view(torch.int32).long() << 32) | ids
    same = unit[1:] == unit[:-1]
    sentinels_last = bool(real[: int(real.sum())].all())
    return sentinels_last and bool((unit[1:] >= unit[:-1]).all() and (exact[1:][same] > exact[:-1][same]).all())


def assert_close_rows(name, ref, tri, rows, rtol=1e-4, atol=1e-5):
    """Compare per-Gaussian float outputs on the given rows; report the first mismatches."""
    r, t = ref[rows].double(), tri[rows].double()
    bad = ~torch.isclose(t, r, rtol=rtol, atol=atol)
    if bad.any():
        idx = torch.nonzero(bad.reshape(bad.shape[0], -1).any(1)).flatten()[:5]
        raise AssertionError(f"{name}: {int(bad.sum())} mismatches; first rows {idx.tolist()}: "
                             f"ref {r[idx].tolist()} tri {t[idx].tolist()}")  # fmt: skip


FORMS = ("tiles", "macro-tiles")  # stage 3's two forms (kernels/bin.py), told apart by the values' dtype


def bin_all(impl, proj, width, height, *, tile=8, capacity=None, form="macro-tiles", scaled=False, gathered=False):
    """Stages 2-3 of either implementation on a projection, in either form: (keys, values, n_pairs). Tiles: keys
    are tile ids, values int32 Gaussian ids, one pair per tiles_touched; macro-tiles: keys are macro-tile ids,
    values int64 entries, one pair per macros_touched, binned in index order (`gathered`: over the visible ones
    gathered, a counted frame's form) and keyed above the rounded depths. The buffers hold `capacity` slots
    (default: exactly the pair count), the keys filled with the sentinel first as the renderer does, the values
    with -1 (so that a slot bin leaves alone shows). `scaled`: bin with the projection's bin_t (AdaGScale's
    thresholds), else with the records' (`bin_t=None`, as the renderer bins exact frames)."""
    assert form in FORMS, form
    records, depths, tiles_touched, macros_touched, bin_t = proj
    macro = form == "macro-tiles"
    counts = macros_touched if macro else tiles_touched
    n = depths.shape[0]
    n_tx, n_ty = tile_grid(width, height, tile)
    if macro:  # in index order (over the visible ones gathered, where `gathered`), keyed by depth
        order = torch.nonzero(tiles_touched > 0).flatten().to(torch.int32) if gathered else None
        offsets = impl.index_offsets(counts, order, out=torch.empty(n, dtype=torch.int64, device=depths.device))
        n_pairs, kd = int(offsets[-1]) if offsets.numel() else 0, impl.MACRO_KEY_DTYPE
    else:  # in depth order
        out = impl.order_outputs(n, depths.device)
        order, offsets, totals = impl.depth_order(depths, tiles_touched, counts, out=out)
        n_pairs, kd = int(totals[2]), impl.key_dtype(n_tx * n_ty)
    cap = n_pairs if capacity is None else capacity
    keys = torch.full((cap,), impl.sentinel_key(kd), dtype=kd, device=records.device)
    values = torch.full((cap,), -1, dtype=torch.int64 if macro else torch.int32, device=records.device)
    impl.bin_pairs(order, offsets, records, counts, width, height, tile_size=tile, bin_t=bin_t if scaled else None,
                   depths=depths if macro else None, out=(keys, values))  # fmt: skip
    return keys, values, n_pairs


def gaussian_ids(values: torch.Tensor) -> torch.Tensor:
    """[C] i64: the Gaussian of each pair, of either form (int32 ids, or int64 entries' low 32 bits)."""
    return unpack_entries(values)[0] if values.dtype == torch.int64 else values.long()


def list_buffers(n_entries, n_tiles, n_pairs, device):
    """`tile_lists`' out buffers, poisoned (unwritten list entries show as -1): ids [n_entries] i32, ranges
    [n_tiles, 2] i32 and the chunk scratch of `list_scratch_shape(n_pairs)`."""
    i32 = dict(dtype=torch.int32, device=device)
    rows, cols = kernels.list_scratch_shape(n_pairs)
    return (
        torch.full((n_entries,), -1, **i32),
        torch.full((n_tiles, 2), -1, **i32),
        torch.full((rows * cols,), -1, **i32),
    )


def lists_of(impl, proj, width, height, *, tile=8, capacity=None, form="macro-tiles"):
    """Stages 2-5 of either implementation, in either form: (ids, ranges) ready for the rasterizer. Tiles: the
    sorted pairs' ids and `tile_ranges`; macro-tiles: `tile_lists`, its list buffer exactly the tile pairs long
    (`depth_order`'s totals). The pair buffers hold `capacity` slots (see `bin_all`)."""
    keys, values, _ = bin_all(impl, proj, width, height, tile=tile, capacity=capacity, form=form)
    sorted_keys, sorted_values = impl.sort_pairs(keys, values, depths=proj[1] if form == "macro-tiles" else None)
    n_tx, n_ty = tile_grid(width, height, tile)
    if form == "tiles":
        return sorted_values, impl.tile_ranges(sorted_keys, n_tx * n_ty)
    out = list_buffers(int(proj[2].sum()), n_tx * n_ty, keys.shape[0], keys.device)
    return impl.tile_lists(sorted_keys, sorted_values, n_tx, n_ty, out=out)


def decode_pairs(keys, values, n_tx, n_ty) -> torch.Tensor:
    """[P, 3] i64 (Gaussian, tile column, tile row) of every tile the pairs of either form hold, the sentinel's
    skipped. Tile pairs (values int32 ids): the key holds the tile (`key_tiles`: int16 keys less 32,768), row
    tile // n_tx, column tile % n_tx. Macro-tile
    pairs (values int64 entries), by the layout kernels/buffers.py states: every set mask bit, the id in the
    entry's low 32 bits, the mask in the high 32, bit MACRO_COLS * row + column of the macro-tile key // n_mx,
    key % n_mx."""
    key = keys.long().cpu()
    if values.dtype == torch.int32:
        tile = kernels.key_tiles(keys).cpu()
        real = (keys.cpu() != kernels.sentinel_key(keys.dtype)) & (tile >= 0) & (tile < n_tx * n_ty)
        return torch.stack([values.long().cpu()[real], tile[real] % n_tx, tile[real] // n_tx], 1)
    n_mx, n_my = kernels.macro_grid(n_tx, n_ty)
    key = key >> kernels.depth_bits(n_mx * n_my)  # the macro-tile, above the rounded depth
    ids, masks = unpack_entries(values.cpu())
    real = (key >= 0) & (key < n_mx * n_my)
    bit = torch.arange(MACRO_COLS * MACRO_ROWS)
    pair, b = torch.nonzero(((masks[:, None] >> bit) & 1).bool() & real[:, None], as_tuple=True)
    row, col = b // MACRO_COLS, b % MACRO_COLS
    return torch.stack([ids[pair], (key[pair] % n_mx) * MACRO_COLS + col, (key[pair] // n_mx) * MACRO_ROWS + row], 1)


def tile_sets(proj, width, height, *, tile=8) -> dict[int, set[tuple[int, int]]]:
    """{Gaussian: {(tile column, tile row)}} of every Gaussian with tiles_touched > 0: the tiles its footprint
    reaches, from the twin's row walk (kernels/reference.py `_tile_rows`, `_row_spans`, which
    tests/kernels/test_tile_walk.py checks against brute force) on the records' conic and bin_t, expanded one tile
    at a time here. Macro-tiles play no part: the later stages' macro-tile outputs are derived from these sets."""
    records, _, tiles_touched, _, bin_t = proj
    n_tx, n_ty = tile_grid(width, height, tile)
    live = torch.nonzero(tiles_touched > 0).flatten()
    mx, my = records[live, 0], records[live, 1]
    a, b, c = ref._record_conic(records[live])
    t = bin_t[live]
    ty_lo, rows, ry = ref._tile_rows(my, a, b, c, t, torch.ones_like(t, dtype=torch.bool), n_ty, tile)
    g_of_row, ty, tx_lo, span = ref._row_spans(ty_lo, rows, mx, my, a, b, c, t, ry, n_tx, tile)
    sets: dict[int, set[tuple[int, int]]] = {g: set() for g in live.tolist()}
    for g, y, x0, s in zip(live[g_of_row].tolist(), ty.tolist(), tx_lo.tolist(), span.tolist()):
        sets[g].update((x, y) for x in range(x0, x0 + s))
    return sets
