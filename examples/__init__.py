"""The example specs, shipped with the package as ``gdln.examples``: ``gdln examples`` lists them."""
