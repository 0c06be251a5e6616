"""The numbers that define the image, one definition for the Triton kernels and their torch twins.

kernels/_device.py and kernels/rasterize.py wrap them as `tl.constexpr` (a @triton.jit function may read a
global only in that form); kernels/reference.py uses them as they are. A twin that re-typed them could drift
from its kernel, and a twin comparison would then test the copy, not the image. Plain Python floats, no
torch or triton import. The values are gsplat 1.5.3's (docs/architecture.md, "Exactness rules").
"""

# ----------------------------------------------------------------------------------------------- compositing

# A Gaussian whose alpha at a pixel centre is below ALPHA_MIN is skipped there; one whose opacity is below it
# can reach no pixel and is culled at projection.
ALPHA_MIN = 1.0 / 255.0
# alpha = min(ALPHA_MAX, o exp(-sigma)): no single Gaussian makes a pixel fully opaque.
ALPHA_MAX = 0.999
# A pixel stops, without blending it, before the Gaussian that would take its transmittance to T_STOP or below.
T_STOP = 1e-4
# Pixel (i, j) has its centre at (i + PIXEL_CENTRE, j + PIXEL_CENTRE) in the coordinates of the projected
# means (cx, cy included): gsplat's convention. Both the tile test and the rasterizer evaluate there.
PIXEL_CENTRE = 0.5

# The blend record (kernels/buffers.py) holds the conic in log2 units, so the rasterizer evaluates 2^e:
# log2(e), and log2(ALPHA_MIN), the exponent below which a Gaussian is skipped at a pixel.
LOG2E = 1.4426950408889634
LOG2_ALPHA_MIN = -7.994353436858858  # log2(1 / 255)

# ----------------------------------------------------------------------------------------------- projection

# The EWA Jacobian is taken at the view-space x/z, y/z clamped to (1 + FOV_SLACK) times the frustum (3DGS,
# gsplat): a Gaussian far outside the view would otherwise get an enormous footprint.
FOV_SLACK = 0.3

# ----------------------------------------------------------------------------------------------- binning

# Binning keeps a pair if d^T conic d <= t + T_MARGIN anywhere in the tile. The margin (1e-3 in Q units, i.e.
# 0.05% in alpha) absorbs float rounding between this test and the rasterizer's alpha >= ALPHA_MIN test, so a
# pixel the rasterizer would blend is never dropped.
T_MARGIN = 1e-3
# Binning and its count take t from the record's lo = log2(o): t = 2 ln(o / ALPHA_MIN) = TWO_LN2 (lo - LOG2_ALPHA_MIN),
# so that binning reads nothing of a Gaussian's but its record (kernels/bin.py).
TWO_LN2 = 1.3862943611198906  # 2 ln(2)
# Far-off-screen extents are clamped to this many tiles beyond the image before float->int conversion.
CLAMP_TILES = 4.0
# Binning emits one pair per macro-tile a Gaussian reaches: a block of MACRO_COLS x MACRO_ROWS tiles, with a
# 32-bit mask of the tiles it reaches there (bit MACRO_COLS * row + column, row-major within the block); stage 5
# expands the macro-tile lists into the tiles' lists (kernels/tile_lists.py). A close-up's Gaussian reaches tens of
# tiles and a few macro-tiles, so the pairs that are emitted and sorted are several times fewer.
MACRO_COLS = 8
MACRO_ROWS = 4
# Tile pairs' keys are int16 where the image has at most this many tiles: a key holds its tile id less
# KEY16_OFFSET, so the 65,536 values of the type cover ids 0 to 65,534 and the sentinel (the type's maximum, 32,767)
# stands for id 65,535, past every real one (1920x1080 at 8 px has 32,400 tiles, 2560x1440 57,600). Counted frames of
# up to twice as many (3840x2160 has 129,600) keep int16 keys by binning their two halves apart (kernels/buffers.py
# `key_halves`).
INT16_TILES = 65535
KEY16_OFFSET = 32768
# A macro-tile pair's key is one int32: the macro-tile id in the high bits and the Gaussian's depth, rounded down, in
# the low ones (kernels/buffers.py `depth_bits`: 21 at 1080p's 1,020 macro-tiles), so one sort of the pairs orders
# every macro-tile's list by depth, and the pairs that tie in it are put in exact (depth, index) order after it
# (kernels/sort.py). The rounded depth is the float's bit pattern less that of DEPTH_KEY_FLOOR, over DEPTH_KEY_SPAN
# bits (2^-8 to 2^24: 32 octaves), cut to the bits the key has left; depths outside it clamp to its ends (they tie,
# and the ties are resolved exactly).
DEPTH_KEY_FLOOR_BITS = 0x3B800000  # the float 2^-8 (0.0039, under any near plane), as an int32
DEPTH_KEY_SPAN = 28  # bits of float bit patterns from 2^-8 to 2^24: 5 of exponent, 23 of mantissa

# ----------------------------------------------------------------------------------------------- schedule

# The rasterizer takes tiles by the bit length of their list length, longest first; lengths from
# 2^(SCHEDULE_CLASSES - 2) entries on share the top class (kernels/schedule.py). Order only, never the image.
SCHEDULE_CLASSES = 24

# ----------------------------------------------------------------------------------------------- AdaGScale

# The centre-tile floor's slack (5% in Q, far above the float rounding of the row/span test) and the smallest
# colour weight (a black Gaussian still occludes); kernels/_device.py derives both.
CENTRE_SLACK = 1.05
WEIGHT_MIN = 0.1

# ----------------------------------------------------------------------------------------------- SH

# The real spherical harmonics' normalisations with the Condon-Shortley phase, in the basis order of 3DGS and
# gsplat (k = l^2 + l + m, m = -l..l). Degree 1 is -SH_C1 y, SH_C1 z, -SH_C1 x; degrees 2 and 3 carry their
# signs here, each multiplying the polynomial written beside the basis in kernels/reference.py `eval_sh`.
SH_C0 = 0.2820947917738781  # 1 / (2 sqrt(pi))
SH_C1 = 0.48860251190292  # sqrt(3 / (4 pi))
SH_C2 = (1.092548430592079, -1.092548430592079, 0.31539156525252005, -1.092548430592079, 0.5462742152960395)
SH_C3 = (
    -0.5900435899266435,
    2.890611442640554,
    -0.4570457994644658,
    0.3731763325901154,
    -0.4570457994644658,
    1.445305721320277,
    -0.5900435899266435,
)
