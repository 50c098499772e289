"""Operations on any rack outside a run: set, show and measure one link's shaping (`links`).

May import the drivers (bridges, nodes), traffic/ and the base.
"""
