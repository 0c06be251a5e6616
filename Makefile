# Set-up and everyday commands. The README's two commands are `make demo` and `make test`.
# Python 3.11 on the CPU machines (the CPU torch wheel on disk is for 3.11); TORCH=torch on a CUDA machine.
PY ?= python3.11
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test check bench clean

$(BIN)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH)" "triton==3.6.0" "numpy<2.4"
	$(BIN)/pip install -q -e ".[video,test,dev]"
	touch $@

demo: $(BIN)/.installed
	$(BIN)/warpsplat render --size 640x480 --out out/plant.png --overwrite
	$(BIN)/warpsplat render --size 256x192 --path orbit --frames 12 --out out/orbit --overwrite

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q -n 2 --durations=15

check: $(BIN)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) out build *.egg-info
