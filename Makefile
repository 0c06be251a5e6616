# Set-up and everyday commands. The README's two commands are `make demo` and `make test`; both are safe to
# run again (the virtual environment is reused when pyproject.toml has not changed).
# Python 3.11 on the CPU machines (the CPU torch wheel on disk is for 3.11). On a CUDA machine pass
# TORCH=torch (any CUDA build of torch >= 2.4) and PY=<your python>.
PY ?= python3.11
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test check bench gl-deps clean

$(BIN)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH)" "triton==3.6.0" "numpy<2.4"
	$(BIN)/pip install -q -e ".[video,viewer,test,dev]"
	touch $@

# The main job: render the bundled scene to an image, a short orbit of PNG frames, and an H.264 orbit video.
# out/ first: the commands refuse to create a missing output folder unasked (a typo would go unnoticed).
demo: $(BIN)/.installed
	mkdir -p out
	$(BIN)/warpsplat render --size 640x480 --out out/plant.png --overwrite
	$(BIN)/warpsplat render --size 256x192 --path orbit --frames 16 --out out/orbit --overwrite
	$(BIN)/warpsplat render --size 256x192 --path orbit --frames 48 --out out/orbit.mp4 --overwrite

# GL tests need an X server (Xvfb) for real windows; EGL needs none. Installed once, as root.
gl-deps:
	@command -v Xvfb >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq xvfb xauth >/dev/null; } || \
	  echo "note: Xvfb is missing and this user cannot install it; window tests will fail"

# Not -q: pytest-randomly's header line gives the seed of the test order (--randomly-seed=N repeats it). Then the
# tests that read real files run again from a clean clone with nothing beside it, as a user's (tests/clean_clone.sh).
test: $(BIN)/.installed gl-deps
	$(BIN)/python -m pytest -n 2 --durations=15
	tests/clean_clone.sh $(BIN)/python -n 2

check: $(BIN)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) out build *.egg-info
