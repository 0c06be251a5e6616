"""AdaGScale (lossy, opt-in): shrunken binning ellipses, Triton against the torch twin, and its guarantees.

- tau = 0 gives s = 1, the exact binning bit for bit (counts, thresholds and keys);
- the shrunken footprint keeps the tile holding the Gaussian's mean, and only ever drops tiles;
- the peripheral score's closed form equals a numerical integral over the annulus, and s inverts it.
tests/renderer/test_adagscale.py renders real scenes with it end to end.
"""

import math

import pytest
import torch

import kernels
import kernels.reference as ref
from kernels.buffers import unpack_records
from tests.conftest import nan_like
from tests.kernels.synthetic import assert_close_rows, bin_all, camera, decode_pairs, gaussians, tile_grid

# a threshold and a floor like renderer/settings.py's defaults: what these tests check holds at any in range
TAU = 0.1
S_MIN = 0.5


def project(impl, n, width, height, device, *, tau, s_min=S_MIN, seed=0, degree=1, grow=0.0):
    means, covars, opac, sh = gaussians(n, sh_degree=degree, seed=seed, device=device)
    covars = covars * math.exp(2 * grow)  # grow > 0: larger footprints, more peripheral tiles
    cam = camera(width, height).packed(device)
    out = tuple(nan_like(t) for t in impl.project_outputs(n, device))
    return impl.project_gaussians(
        means, covars, opac, sh, cam, width, height, sh_degree=degree, adagscale_tau=tau, adagscale_s_min=s_min,
        out=out,
    )  # fmt: skip


def emit(impl, proj, width, height):
    """(keys, entries) of the macro-tile pairs binned at the projection's thresholds (8 px tiles)."""
    keys, entries, _ = bin_all(impl, proj, width, height, scaled=True)
    return keys, entries


def tile_pairs(keys, entries, width, height, tile=8):
    """{(Gaussian, tile id)} of the tiles the pairs' masks hold."""
    n_tx, n_ty = tile_grid(width, height, tile)
    return {(g, y * n_tx + x) for g, x, y in decode_pairs(keys, entries, n_tx, n_ty).tolist()}


@pytest.mark.parametrize("impl", [kernels, ref], ids=["triton", "torch"])
def test_tau_zero_is_exact_binning(impl, device):
    """s = 1 exactly when tau = 0: counts, thresholds and pairs equal the exact path's bit for bit."""
    width, height = 128, 96
    exact = project(impl, 3000, width, height, device, tau=None, grow=0.5)
    zero = project(impl, 3000, width, height, device, tau=0.0, grow=0.5)
    live = exact[2] > 0
    assert torch.equal(zero[2], exact[2]) and torch.equal(zero[3], exact[3])  # tiles and macro-tiles touched
    assert torch.equal(zero[4][live], exact[4][live])  # bin_t
    for got, want in zip(zero[:2], exact[:2]):  # records, depths
        assert torch.equal(got[live], want[live])
    keys, entries = emit(impl, zero, width, height)
    want_k, want_e = emit(impl, exact, width, height)
    assert torch.equal(entries, want_e) and torch.equal(keys, want_k)


def test_triton_matches_reference(device):
    """New outputs (bin_t, counts at t') agree; pairs agree given the same projection."""
    width, height = 128, 96
    tau = TAU
    want = project(ref, 3000, width, height, device, tau=tau, degree=2, grow=0.5)
    got = project(kernels, 3000, width, height, device, tau=tau, degree=2, grow=0.5)
    diff = (want[2] - got[2]).abs()
    # float-rounding boundary cases only, bounded as in test_project.py; a macro-tile count moves only with them
    assert int((diff > 1).sum()) == 0 and int((diff == 1).sum()) <= 3, diff.nonzero()[:5]
    macro_diff = (want[3] - got[3]).abs()
    assert int((macro_diff > 1).sum()) == 0 and not bool(((macro_diff > 0) & (diff == 0)).any())
    rows = (want[2] > 0) & (got[2] > 0)
    assert_close_rows("bin_t", want[4], got[4], rows)
    _, _, opacities, want_colors = unpack_records(want[0])
    assert_close_rows("colors", want_colors, unpack_records(got[0])[3], rows, rtol=2.0**-10)  # fp16 in the record
    shrunk = (want[4][rows] < 0.999 * ref._alpha_threshold_t(opacities[rows])).float().mean()
    assert shrunk > 0.3, f"only {shrunk:.0%} of the Gaussians shrank: the test does not exercise AdaGScale"
    keys_t, entries_t = emit(kernels, want, width, height)
    keys_r, entries_r = emit(ref, want, width, height)
    assert torch.equal(entries_t, entries_r) and torch.equal(keys_t, keys_r)
    assert (keys_t != kernels.sentinel_key(keys_t.dtype)).all()


@pytest.mark.parametrize("impl", [kernels, ref], ids=["triton", "torch"])
def test_tau_on_the_device_is_the_same_tau(impl, device):
    """The renderer hands tau over as a [1] tensor on the device (read when the kernel runs, so a replayed graph
    takes each frame's value): the outputs equal those of the same tau as a float, bit for bit, and a tensor
    holding another tau gives other thresholds."""
    width, height = 64, 48
    as_float = project(impl, 1500, width, height, device, tau=0.3, grow=0.5)
    as_float = tuple(t.clone() for t in as_float)
    on_device = project(impl, 1500, width, height, device, tau=torch.tensor([0.3], device=device), grow=0.5)
    live = as_float[2] > 0
    assert torch.equal(on_device[2], as_float[2]) and torch.equal(on_device[3], as_float[3])
    assert torch.equal(on_device[4][live], as_float[4][live])
    other = project(impl, 1500, width, height, device, tau=torch.tensor([0.03], device=device), grow=0.5)
    assert (other[4][live] > on_device[4][live]).any() and int(other[2].sum()) > int(on_device[2].sum())


@pytest.mark.parametrize("impl", [kernels, ref], ids=["triton", "torch"])
def test_centre_tile_kept_and_only_tiles_dropped(impl, device):
    """Even at an absurd tau and a tiny s_min, the tile holding the mean stays whenever exact binning has it,
    and the shrunken pairs are a subset of the exact pairs (the ellipse at s^2 t lies inside the one at t)."""
    width, height, tile = 128, 96, 8  # project's default tile size
    n_tx = (width + tile - 1) // tile
    for seed, grow in ((1, 0.0), (2, 0.7)):
        exact = project(impl, 2000, width, height, device, tau=None, seed=seed, grow=grow)
        shrunk = project(impl, 2000, width, height, device, tau=1e6, s_min=0.01, seed=seed, grow=grow)
        exact_pairs = tile_pairs(*emit(impl, exact, width, height), width, height)
        shrunk_pairs = tile_pairs(*emit(impl, shrunk, width, height), width, height)
        assert shrunk_pairs <= exact_pairs
        assert len(shrunk_pairs) < 0.8 * len(exact_pairs)
        m = exact[0][:, :2]  # the records' screen means
        on_screen = (exact[2] > 0) & (m[:, 0] >= 0) & (m[:, 0] < width) & (m[:, 1] >= 0) & (m[:, 1] < height)
        centre_tile = (m[:, 1] // tile).long() * n_tx + (m[:, 0] // tile).long()
        need = {(g, int(centre_tile[g])) for g in on_screen.nonzero().flatten().tolist()} & exact_pairs
        assert len(need) > 500
        lost = need - shrunk_pairs
        assert not lost, f"{len(lost)} centre tiles dropped, e.g. {sorted(lost)[:5]}"


def edge_gaussians(n, width, height, device, *, seed=0):
    """(means, covars, opacities, sh) of n small Gaussians (about 0.6 px sigma, opacity 0.9) whose means lie
    0.6-1.4 px outside the image's left or top edge, at mid-tile along it: each reaches the pixel centres of
    one edge tile only (a tile box of one tile) while its mean is off screen, where the centre floor does not
    hold and a shrink to the floor alone misses every pixel centre."""
    g = torch.Generator().manual_seed(seed)
    cam = camera(width, height)
    depth = 4.0
    off = 0.6 + 0.8 * torch.rand(n, generator=g)
    left = torch.arange(n) % 2 == 0
    along_x = (torch.randint(0, width // 8, (n,), generator=g) * 8 + 4).float()
    along_y = (torch.randint(0, height // 8, (n,), generator=g) * 8 + 4).float()
    u = torch.where(left, -off, along_x)
    v = torch.where(left, along_y, -off)
    p_cam = torch.stack([(u - cam.cx) * depth / cam.fx, (v - cam.cy) * depth / cam.fy, torch.full((n,), depth)], 1)
    pose = torch.tensor(cam.T_world_camera, dtype=torch.float32)
    means = p_cam @ pose[:3, :3].T + pose[:3, 3]
    sigma = 0.6 * depth / cam.fx  # world units of 0.6 px at this depth (before eps2d's 0.3 px^2)
    covars = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 1.0]).repeat(n, 1) * sigma**2
    sh = torch.rand(n, 1, 3, generator=g) + 1.0  # bright: the score's colour weight at its top
    return means.to(device), covars.to(device), torch.full((n,), 0.9, device=device), sh.to(device, kernels.SH_DTYPE)


@pytest.mark.parametrize("impl", [kernels, ref], ids=["triton", "torch"])
def test_one_tile_footprints_keep_their_exact_tiles(impl, device):
    """The gate: a Gaussian whose tile box at the full t is one tile is not scored, so even at an absurd tau it
    keeps t (its exact tile), also where its mean is off screen and the shrunken ellipse would reach no pixel
    centre; Gaussians with larger boxes still shrink."""
    width, height, tile = 128, 96, 8
    n_tx, n_ty = width // tile, height // tile
    rand = gaussians(3000, seed=3, device=device)
    edge = edge_gaussians(64, width, height, device)
    means, covars, opac, sh = (torch.cat([r, e]) for r, e in zip(rand, edge))
    cam = camera(width, height).packed(device)

    def run(tau):
        out = tuple(nan_like(t) for t in impl.project_outputs(means.shape[0], device))
        return impl.project_gaussians(means, covars, opac, sh, cam, width, height, sh_degree=0, adagscale_tau=tau,
                                      adagscale_s_min=0.01, out=out)  # fmt: skip

    exact, shrunk = run(None), run(1e6)
    live = exact[2] > 0
    m, t = exact[0][:, :2].double(), exact[4].double()
    a, b, c = (v.double() for v in ref._record_conic(exact[0]))  # the conic the count walked

    def box_tiles(scale):  # the tile box at scale * t, in float64 (no float boundary case at scale 1 +- 1e-4)
        _, rows, _ = ref._tile_rows(m[:, 1], a, b, c, t * scale, live, n_ty, tile)
        _, cols = ref._tile_cols(m[:, 0], a, b, c, t * scale, n_tx, tile)
        return rows * cols

    one = live & (box_tiles(1 + 1e-4) == 1)  # a one-tile box, however the kernel rounds
    many = live & (box_tiles(1 - 1e-4) > 1)
    assert int(one.sum()) > 300 and int(many.sum()) > 300
    assert torch.equal(shrunk[4][one], exact[4][one]), "a one-tile footprint was scored"
    assert torch.equal(shrunk[2][one], exact[2][one]) and torch.equal(shrunk[3][one], exact[3][one])
    edge_rows = torch.arange(means.shape[0], device=device) >= 3000
    off_screen = edge_rows & one & ((m[:, 0] < 0) | (m[:, 1] < 0))
    assert int(off_screen.sum()) >= 48, "the edge Gaussians do not exercise the off-screen case"
    assert (shrunk[2][off_screen] == 1).all(), "an off-screen one-tile footprint lost its tile"
    # without the gate the centre floor alone would have set their threshold: it reaches no pixel centre
    floor = ref.CENTRE_SLACK * 0.25 * (a + c + 2 * b.abs())
    reach = torch.sqrt(floor * c / (a * c - b * b))  # half-width of that ellipse's box in x
    assert (m[:, 0][off_screen & (m[:, 0] < 0)] + reach[off_screen & (m[:, 0] < 0)] < 0.5).all()
    assert (shrunk[4][many] < 0.9 * exact[4][many]).float().mean() > 0.5, "larger footprints did not shrink"
    for got, want in zip(shrunk[:2], exact[:2]):  # the same records and depths, whatever the gate decided
        assert torch.equal(got[shrunk[2] > 0], want[shrunk[2] > 0])


def test_score_closed_form_matches_integral():
    """M(s) = 2 pi o sqrt(det Sigma) (exp(-s^2 t/2) - exp(-t/2)) against the midpoint sum of o exp(-Q/2) over
    the annulus s^2 t <= Q <= t (grid step 1/40 of the smaller axis: relative error < 2e-3); and s from
    `adagscale_s2` inverts the score (S(s) = tau where no clamp applies)."""
    cases = [  # Sigma (xx, xy, yy) in px^2, opacity, s
        ((4.0, 0.0, 4.0), 0.9, 0.5),
        ((30.0, 12.0, 9.0), 0.4, 0.7),
        ((2.0, -1.2, 1.5), 0.05, 0.3),
        ((100.0, 60.0, 50.0), 1.0, 0.9),
    ]
    for (sxx, sxy, syy), o, s in cases:
        det = sxx * syy - sxy * sxy
        a, b, c = syy / det, -sxy / det, sxx / det
        t = 2 * math.log(255 * o) + ref.T_MARGIN
        h = math.sqrt(min(torch.linalg.eigvalsh(torch.tensor([[sxx, sxy], [sxy, syy]], dtype=torch.float64))))
        h /= 40
        rx, ry = math.sqrt(t * sxx), math.sqrt(t * syy)
        xs = torch.arange(-rx, rx + h, h, dtype=torch.float64) + h / 2
        ys = torch.arange(-ry, ry + h, h, dtype=torch.float64) + h / 2
        dy, dx = torch.meshgrid(ys, xs, indexing="ij")
        q = a * dx * dx + 2 * b * dx * dy + c * dy * dy
        ring = (q >= s * s * t) & (q <= t)
        numeric = float((o * torch.exp(-q / 2) * ring).sum() * h * h)
        f64 = lambda v: torch.tensor([v], dtype=torch.float64)  # noqa: E731
        closed = float(ref.peripheral_score(f64(a), f64(b), f64(c), f64(o), f64(t), f64(1.0), f64(s))[0])
        assert abs(numeric - closed) <= 2e-3 * closed, (numeric, closed)
        # inversion: tau = S(s) gives back s^2 (weight 1 is the clamp's top: any colour >= 1), unless the
        # centre-tile floor is larger (the small third case)
        s2 = ref.adagscale_s2(f64(a), f64(b), f64(c), f64(o), f64(t), f64(1.0), closed, 1e-3)
        want = max(s * s, ref.CENTRE_SLACK * 0.25 * (a + c + 2 * abs(b)) / t)
        assert abs(float(s2[0]) - want) < 1e-6, (float(s2[0]), want)


def test_triton_kernel_score_is_minimal(device):
    """The kernel's s is the smallest admissible one: S(s) <= tau, and S at a 1% smaller s exceeds tau
    unless a floor (s_min or the centre tile) set it."""
    width, height, tau, s_min = 128, 96, 0.3, S_MIN
    records, _, tt, _, bin_t = project(kernels, 3000, width, height, device, tau=tau, grow=0.5)
    live = tt > 0
    _, conics, opacities, colors = unpack_records(records)
    a, b, c = conics[live].double().unbind(-1)
    o = opacities[live].double()
    t = ref._alpha_threshold_t(o)
    s = torch.sqrt(bin_t[live].double() / t).clamp(max=1.0)
    w = ref.colour_weight(colors[live]).double()
    assert (s >= s_min - 1e-6).all()
    assert (ref.peripheral_score(a, b, c, o, t, w, s) <= tau * (1 + 1e-3) + 1e-6).all()
    centre = ref.CENTRE_SLACK * 0.25 * (a + c + 2 * b.abs()) / t
    free = (s > s_min * 1.02) & (s * s > centre * 1.02) & (s < 0.999)
    assert free.sum() > 100
    worse = ref.peripheral_score(a, b, c, o, t, w, s * 0.99)[free]
    assert (worse > tau).all()
