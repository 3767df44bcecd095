"""The reports' types: frozen dataclasses whose fields are the top-level keys of the JSON that
the commands print (docs/json.md), `Report.to_json` giving that dictionary, and the Markdown
tables a notebook shows (``_repr_markdown_``, ``gdln ... --markdown``).

A sweep's points are typed records (``records``: `SweepPoint`, and in it `NetworkAtPoint`,
`PointAssumptions`, `PredictedFollows`, `CheckedPoint`), read as attributes
(``sweep.points[3].checked.follows``), and so are a race's crossovers (`Crossover`), verify's
networks (`VerifiedNetwork`) and both reports' `PredictedFollows`; the other nested entries (a
network of the race) stay the JSON's dictionaries, read by the keys the contract names
(``report.networks[0]["t_90"]``). A report and a record are also read-only mappings of their
keys (``report["winner"]``, ``point["checked"]["follows"]``), as code written when they were
dictionaries reads them.

One module per family of reports on ``base`` (the `Report` base, optional fields and Markdown
cells): ``race`` (race, verify, simulate), ``unique``, ``sweep``, ``derive`` (one network, shared
edges), ``graphs`` (graph verify, zero-shot, depth) and ``pathways`` (union, align, find-gates,
lemma). The rest of gdln imports the names re-exported here.
"""

from .base import Record, Report, crossover_line, exact_cell, is_number, markdown_table, optional, table_cell
from .derive import DeriveReport, SharedDeriveReport
from .graphs import DepthReport, GraphVerifyReport, ZeroShotReport
from .pathways import AlignReport, FindGatesReport, LemmaReport, UnionReport
from .race import (
    RaceReport,
    SimulateReport,
    VerifyReport,
    agf_text,
    predicted_follows_text,
    predicted_validity_text,
    resolution_text,
    validity_text,
)
from .records import (
    CheckedPoint,
    Crossover,
    NetworkAtPoint,
    PointAssumptions,
    PredictedFollows,
    SweepPoint,
    VerifiedNetwork,
)
from .sweep import SweepReport
from .unique import UniqueReport

__all__ = [
    # the reports, on their base
    "Report",
    "AlignReport",
    "DepthReport",
    "DeriveReport",
    "FindGatesReport",
    "GraphVerifyReport",
    "LemmaReport",
    "RaceReport",
    "SharedDeriveReport",
    "SimulateReport",
    "SweepReport",
    "UnionReport",
    "UniqueReport",
    "VerifyReport",
    "ZeroShotReport",
    # the typed entries of the reports, on their base
    "Record",
    "CheckedPoint",
    "Crossover",
    "NetworkAtPoint",
    "PointAssumptions",
    "PredictedFollows",
    "SweepPoint",
    "VerifiedNetwork",
    # their cells and verdicts in words, which the commands' text shares
    "agf_text",
    "crossover_line",
    "exact_cell",
    "is_number",
    "markdown_table",
    "optional",
    "predicted_follows_text",
    "predicted_validity_text",
    "resolution_text",
    "table_cell",
    "validity_text",
]
