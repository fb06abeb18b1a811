"""`python -m workloads.train.run [OPTIONS]`: the training workload, the same as `twin train`."""

from __future__ import annotations

import typer

from workloads.train.cli import train


def main() -> None:
    typer.run(train)


if __name__ == "__main__":
    main()
