# argv: --epochs ten
"""A click CLI rejects a value: usage error, exit 2."""

import click


@click.command()
@click.option("--epochs", type=int, default=10)
def main(epochs):
    print("training for", epochs)


main()
