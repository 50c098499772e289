"""Results: run records (`records`: the self-describing `runs/<id>/` format), the summary
definitions shared by scenarios (`summary`), windows of a run's traffic a summary can be
computed over (`window`), statistics over repetitions and between reproductions (`stats`), a
run's time series for its figures (`series`) and figures over many runs (`figures`). May import
telemetry's point type, parsers and the base.
"""
