"""The ``gdln`` command line. Imports run one way: gdln -> paper_figures -> verify -> numeric -> derive."""
