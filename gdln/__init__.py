"""The ``gdln`` command line. Imports run one way: gdln.cli -> gdln.figures -> gdln.verify -> gdln.numeric -> gdln.derive."""
