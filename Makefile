# clustertwin: `make up` starts the default twin, `make test` runs the suite.
# Both run `make install` first, which sets up a fresh Debian 12 machine (as root) and is quick
# when nothing is missing.

PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
TOPOLOGY    ?= mini
RUN_DIR     ?= .twin
APT_PACKAGES := mosquitto nftables iproute2 iputils-ping util-linux iperf3 postgresql prometheus ibsim-utils opensm infiniband-diags slurm-wlm munge docker.io debootstrap docker-compose fuse3 fio rsync s3fs attr jq curl mininet bridge-utils bonnie++ dbench gcc libc6-dev
PROTOS      := $(wildcard protos/clustertwin/v1/*.proto)
PYTEST_ARGS ?=

.PHONY: install up down status test unit lint proto proto-check bench clean chaos

install: $(VENV)/.installed
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi
	$(MAKE) -s -C native/nvml   # the twin's libnvidia-ml.so.1 (docs/NVML.md)

# The venv is rebuilt when the dependency pins change. requirements.lock pins every transitive
# package for reproducible installs (`make lock` refreshes it).
$(VENV)/.installed: pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c requirements.lock -e '.[dev,real]'
	touch $@

lock:
	$(BIN)/pip freeze --exclude-editable | grep -v '^clustertwin' > requirements.lock

up: install
	$(BIN)/twin up $(TOPOLOGY) --run-dir $(RUN_DIR)

down:
	$(BIN)/twin down --run-dir $(RUN_DIR)

status:
	$(BIN)/twin status --run-dir $(RUN_DIR)

proto: install
	$(BIN)/python -m grpc_tools.protoc -I protos --python_out=protos/gen --pyi_out=protos/gen \
	  --grpc_python_out=protos/gen $(PROTOS)

# Fails when the committed generated code and the .proto files disagree.
proto-check: install
	@tmp=$$(mktemp -d); \
	$(BIN)/python -m grpc_tools.protoc -I protos --python_out=$$tmp --pyi_out=$$tmp --grpc_python_out=$$tmp $(PROTOS); \
	if diff -r -x __init__.py -x __pycache__ $$tmp/clustertwin protos/gen/clustertwin; then \
	  echo "generated protobuf code matches protos/"; rm -rf $$tmp; \
	else echo "protos/gen is stale: run 'make proto' and commit the result" >&2; rm -rf $$tmp; exit 1; fi

lint: install
	$(BIN)/ruff check .
	$(BIN)/python protos/lint.py $(PROTOS)

test: install proto-check lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

unit: install
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench

# The thrasher (root): rack with the fabric, Ceph, Lustre and Slurm on --network netns, a verifying
# workload, and a seeded fault schedule; the report goes to $(CHAOS_OUT)/report.{json,html}, and the
# target fails when any check does (nothing lost, all healthy, no fault left, twin down <= 15 s, no
# leftovers). Another seed or length: make chaos SEED=7 MINUTES=2.
SEED        ?= 1
MINUTES     ?= 10
CHAOS_OUT   ?= chaos-report
chaos: install
	$(BIN)/twin chaos --seed $(SEED) --minutes $(MINUTES) --out $(CHAOS_OUT)

clean:
	-$(BIN)/twin down --run-dir $(RUN_DIR) 2>/dev/null
	rm -rf $(RUN_DIR) .pytest_cache .ruff_cache
