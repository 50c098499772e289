"""Results: run records (`records`: the self-describing `runs/<id>/` format), the summary
definitions shared by scenarios (`summary`), statistics over repetitions (`stats`) and
figures over many runs (`figures`). May import telemetry's point type, parsers and the base.
"""
