"""Learning from use: ``graphmem learn``."""

from __future__ import annotations

import click

from ._app import Context, cli, echo_json, pass_ctx


@cli.command()
@click.option("--status", is_flag=True, help="Show the models the store holds; train nothing.")
@click.option("--no-ranker", is_flag=True, help="Leave the ranker as it is.")
@click.option("--no-forecast", is_flag=True, help="Leave the forecast of need as it is.")
@click.option("--horizon", type=click.FloatRange(0, 3650, min_open=True), default=30.0,
              show_default=True, help="Forecast horizon in days.")
@pass_ctx
def learn(ctx: Context, status: bool, no_ranker: bool, no_forecast: bool,
          horizon: float) -> None:
    """Learn from use: the ranker of the `learned` preset (from feedback) and the
    forecast of need the lifecycle shows beside its rule (from the history of use).

    Each is kept in the store with its training date, data size and validation, and
    used only if it validated better than what it would replace.
    """
    if no_ranker and no_forecast and not status:
        raise click.UsageError("--no-ranker and --no-forecast leave nothing to learn")
    store = ctx.api(read_only=status)  # the database, or the sidecar that holds it
    report = store.learned() if status else store.learn(
        ranker=not no_ranker, forecast=not no_forecast, horizon_days=horizon)
    if ctx.json:
        echo_json(report.model_dump(mode="json"))
        return
    click.echo("\n".join(report.lines()))
