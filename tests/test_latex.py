"""The LaTeX export reads as a derivation (issue 28): data and gates, structured effective
correlations, their singular value decomposition, the reduced system written out, closed forms,
loss and speed, in THEORY.md's notation; no Python text, no dotted state names, no full matrix of a
multiple of the identity; and it compiles with pdflatex within the margins."""

import os
import re
import shutil
import subprocess

import pytest
import sympy

from gdln.cli import main
from gdln.derive import formulas
from gdln.derive.derivation import TAU, TIME, NetworkDerivation
from gdln.derive.latex import to_latex
from gdln.derive.latex.matrices import Registry, simple, structured
from gdln.derive.latex.text import in_words, ranges
from gdln.derive.latex.width import split_sum, width
from gdln.derive.spec import load_spec
from gdln.derive.staged import StagedDerivation
from gdln.derive.words import join, plural

from .helpers import ROOT

K3_SPEC = ROOT / "examples" / "section5_k3.toml"
SECTION4_SPEC = ROOT / "examples" / "section4_context.toml"
XOR_SPEC = ROOT / "examples" / "xor.toml"
THREE_CONTEXTS_SPEC = ROOT / "examples" / "three_contexts.toml"

_MATH = re.compile(
    r"\$[^$]*\$"
    r"|\\begin\{(equation|align|gather|multline)\*\}.*?\\end\{\1\*\}",
    re.DOTALL,
)


def prose(tex: str) -> str:
    """The document's text outside formulas (and outside the preamble and comments)."""
    body = tex.split("\\begin{document}")[-1]
    body = "\n".join(line for line in body.splitlines() if not line.startswith("%"))
    return _MATH.sub(" ", body)


def assert_reads_as_a_derivation(tex: str, speed: bool = True) -> None:
    text = prose(tex)
    for leak in ("[", "]", '"', "Sigma_", "_{g", "(x) ="):
        assert leak not in text, (leak, text[max(0, text.find(leak) - 200) : text.find(leak) + 200])
    assert not re.search(r"'[^'\s]+'", text), re.search(r"'[^'\s]+'", text)  # a quoted name
    # state variables have clean indices: a_{p,k}, b_i; never a pathway's or a group's dotted name
    assert not re.search(r"[ab]0?_\{[^}]*\.", tex), re.search(r"[ab]0?_\{[^}]*\.", tex)
    assert not re.search(r"[ab]_\{0 ", tex)
    assert "m_i" not in tex or "$m_i$ modes" in tex  # m_i is defined where it is used
    assert "1 outputs" not in text and "1 inputs" not in text and "values $1$" not in text
    for heading in ("Data and gates", "Effective correlations", "Singular value decomposition", "Reduced dynamics"):
        assert f"{{{heading}}}" in tex, heading
    for heading in ("Closed forms", "Loss") + (("Speed",) if speed else ()):
        assert f"{{{heading}}}" in tex, heading


def pdflatex(tex_path):
    if shutil.which("pdflatex") is None:
        if os.environ.get("GDLN_REQUIRE_PDFLATEX"):
            pytest.fail("pdflatex is required here but not installed")
        pytest.skip("pdflatex not installed")
    result = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex_path.name],
        cwd=tex_path.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    log = tex_path.with_suffix(".log").read_text(errors="replace")
    pages = int(re.search(r"Output written on .*\((\d+) pages?", log).group(1))
    overfull = re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide", log)
    return pages, overfull


def derive_document(capsys, tmp_path, spec, network, name):
    path = tmp_path / f"{name}.tex"
    assert main(["derive", str(spec), "--network", network, "--latex", str(path)]) == 0
    capsys.readouterr()
    return path, path.read_text()


# --- the three documents ----------------------------------------------------------------------------
def test_xor_document_is_a_derivation_on_two_pages(capsys, tmp_path):
    path, tex = derive_document(capsys, tmp_path, XOR_SPEC, "xor", "xor")
    assert_reads_as_a_derivation(tex)
    derivation = NetworkDerivation(load_spec(XOR_SPEC), "xor")
    system = derivation.reduced_system
    assert system.kind == "groups" and len(system.variables) == 1
    # the one equation, from the reduced system's own s and C, and its closed form and fixed point
    assert tex.count("\\tau \\dot b_{1} &= 2\\, b_{1}\\Bigl(" + sympy.latex(system.singular_values[0])) == 1
    assert sympy.simplify(system.coupling[0, 0] - (sympy.Symbol("Delta", positive=True) ** 2 + 8) / 16) == 0
    assert "b_{1}(t) &= \\frac{b_{1}^{*}}{1 + \\left(\\frac{b_{1}^{*}}{b_{1}(0)} - 1\\right)" in tex
    assert "b_{1}^{*} &= \\frac{2}{\\sqrt{\\Delta^{2} + 8}}" in tex
    assert (
        "\\tau \\dot b_{1} &= 2\\, b_{1}\\Bigl(\\frac{\\sqrt{\\Delta^{2} + 8}}{8} - \\frac{\\Delta^{2} + 8}{16}\\,b_{1}\\Bigr)"
        in tex
    )
    # the loss in b_1 from the reduced system (m_1 = 4 modes), and where it ends
    assert (
        "L = \\frac{1}{2} - \\frac{\\sqrt{\\Delta^{2} + 8}}{2}\\,b_{1} + \\frac{\\Delta^{2} + 8}{8}\\,b_{1}^{2}" in tex
    )
    assert "L(\\infty) = 0" in tex and "\\Delta^{*} = \\frac{2 \\sqrt{6}}{3}" in tex
    assert "v_{1,1} = \\left[2, 2, \\Delta\\right]^\\top / \\sqrt{\\Delta^{2} + 8}" in tex
    assert "datapoint 1 &" in tex  # gates in the document's own numbering (rows of X)
    pages, overfull = pdflatex(path)
    assert pages <= 2 and not overfull, (pages, overfull)


@pytest.mark.slow
@pytest.mark.parametrize("network", ["dense", "ctx-only"])
def test_three_context_documents_stay_within_the_margins(capsys, tmp_path, network):
    """With g symbolic (issue 36): a loss whose couplings are expressions in implicit roots is not
    written out (each d is in the table by its value), a maximum of many parametric singular
    values breaks into rows, and a d with a parametric square root is over one denominator."""
    path, tex = derive_document(capsys, tmp_path, THREE_CONTEXTS_SPEC, network, network)
    assert_reads_as_a_derivation(tex)
    if network == "dense":
        assert "\\rho_{1}" in tex and "\nL = " not in tex  # the loss written out starts a display line
    else:
        assert "s_{\\max} = \\max\\bigl(" in tex
    _, overfull = pdflatex(path)
    assert not overfull, overfull


def test_section5_document_writes_the_mode_system_in_blocks(capsys, tmp_path):
    path, tex = derive_document(capsys, tmp_path, K3_SPEC, "common+2", "k3")
    assert_reads_as_a_derivation(tex)
    text = prose(tex)
    assert "contexts 1 and 2" in text and "3 contexts" in text
    # structured correlations: never the 8 x 8 matrix of a multiple of the identity
    for p in (2, 3, 4):
        lhs, rhs = re.escape(f"\\Sigma^{{x}}({p})"), re.escape("= \\tfrac{1}{12}I_{8}")
        assert re.search(f"{lhs} &?{rhs}", tex), p
    assert "\\tfrac{1}{24}I_{8}" in tex  # the context pathways' cross correlations
    assert "M_{1}" in tex and "\\tfrac{1}{12}M_{1}^\\top" in tex  # Y's hierarchy block, named once
    assert "\\frac{1}{12} & 0 & 0" not in tex
    # the group reduction fails and the pathways interact with no closed form: the system is the
    # reduced flow the race integrates (issue 47), one gradient per pathway with its coupling blocks
    assert "It is the system \\texttt{gdln race} integrates" in tex
    for p in (1, 2, 3, 4):
        assert tex.count(f"G_{{{p}}} &= \\Sigma^{{yx}}({p})") == 1
        assert f"\\tau \\dot W_{{{p},1}} = W_{{{p},2}}^\\top G_{{{p}}}" in tex
    assert "W_{1} \\Sigma^x(1, 2)" in tex and "one equation per mode" not in text
    assert "the modes of class 1 of pathway 1 drive pathway 2 outside its own singular vectors" in text
    pages, overfull = pdflatex(path)
    assert pages <= 4 and not overfull, (pages, overfull)


@pytest.mark.slow
def test_section4_document_names_algebraic_numbers_by_their_polynomials(capsys, tmp_path):
    """Section 4's singular values have no radical form: each is the root of a printed polynomial,
    numbered, with its value; named couplings are counted, never shown as c_{k,l}."""
    path, tex = derive_document(capsys, tmp_path, SECTION4_SPEC, "common+2", "s4")
    assert_reads_as_a_derivation(tex)
    assert "\\sqrt{z_{1,1}} \\approx" in tex and "P_{1}(z) = " in tex and "of degree 8" in tex
    assert "s_{\\max} = \\sqrt{z_{1,8}} \\approx 1.14271" in tex
    assert "Assumption 2.1.1 fails for modes 3--10 of pathway 1" in tex
    assert "c_{" not in tex
    pages, overfull = pdflatex(path)
    assert pages <= 6 and not overfull, (pages, overfull)


def test_staged_document_has_closed_forms_in_both_stages(tmp_path):
    task = load_spec(K3_SPEC)
    staged = StagedDerivation(task, "common+2")
    tex = to_latex(staged, document=True)
    assert_reads_as_a_derivation(tex, speed=False)
    assert "{Stage 1: pathway 1 alone}" in tex and "{Stage 2: pathways 2, 3 and 4 on the residual}" in tex
    first, second = staged.first_stage.reduced_system, staged.second_stage.reduced_system
    # stage 1 names b_1..b_5, stage 2 goes on from b_6; both have closed forms
    for i in range(1, len(first.variables) + len(second.variables) + 1):
        assert tex.count(f"b_{{{i}}}(t) &=") == 1, i
    assert "\\tilde Y = " in tex and "M_{2}" in tex
    residual_loss = sympy.latex(staged.second_stage.initial_loss)  # stage 2 starts from stage 1's final loss
    assert f"\\langle y y^\\top \\rangle = {residual_loss}$" in tex and f"L(\\infty) = {residual_loss}" in tex
    path = tmp_path / "staged.tex"
    path.write_text(tex)
    pages, overfull = pdflatex(path)
    assert pages <= 6 and not overfull, (pages, overfull)


def test_fragment_is_the_body_and_compiles_with_amsmath_alone(tmp_path):
    derivation = NetworkDerivation(load_spec(K3_SPEC), "common+2")
    body = to_latex(derivation)
    assert "\\documentclass" not in body and body == derivation._repr_latex_()
    (tmp_path / "body.tex").write_text(body)
    main_tex = tmp_path / "main.tex"
    main_tex.write_text(
        "\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n\\input{body.tex}\n\\end{document}\n"
    )
    pdflatex(main_tex)


# --- the pieces ------------------------------------------------------------------------------------
def test_closed_form_as_written_is_the_derivations_closed_form():
    """The document writes x(t) = x*/(1 + (x*/x(0) - 1) exp(-2 s t/tau)) with x* = s/d: the same
    function as formulas.mode_strength, which builds the derivation's closed forms."""
    s, d, x0 = sympy.symbols("s d x0", positive=True)
    fixed = s / d
    written = fixed / (1 + (fixed / x0 - 1) * sympy.exp(-2 * s * TIME / TAU))
    assert sympy.simplify(written - formulas.mode_strength(s, d, x0, TIME, TAU, sympy)) == 0


def test_structured_matrices():
    assert simple(sympy.eye(8) / 12) == "\\tfrac{1}{12}I_{8}"
    assert simple(sympy.zeros(3, 2)) == "0"
    assert simple(sympy.ones(3, 2) / 24) == "\\tfrac{1}{24}\\mathbf{1}_{3}\\mathbf{1}_{2}^\\top"
    assert simple(sympy.ones(3, 1)) == "\\mathbf{1}_{3}"
    assert simple(sympy.diag(1, 2)) == "\\operatorname{diag}\\left(1, 2\\right)"
    assert simple(sympy.eye(3) + sympy.ones(3, 3) / 2) == "I_{3} + \\tfrac{1}{2}\\mathbf{1}_{3}\\mathbf{1}_{3}^\\top"
    assert simple(sympy.Matrix([[1, 2], [3, 4]])) is None
    registry = Registry()
    block = sympy.Matrix([[1, 0, 1], [0, 1, 1]])
    assert registry.add(block) == "M_{1}"
    assert registry.find(block.T / 8) == "\\tfrac{1}{8}M_{1}^\\top"
    assert registry.find(block * sympy.ones(3, 1) / 24) == "\\tfrac{1}{24}M_{1}\\mathbf{1}_{3}"
    assert registry.find(sympy.Matrix([[1, 1], [1, 0]])) is None
    # blocks by the partition, merged while every block keeps a structured form
    matrix = sympy.Matrix(
        [
            [sympy.Rational(1, 4), 0, sympy.Rational(1, 2)],
            [0, sympy.Rational(1, 4), sympy.Rational(1, 2)],
            [sympy.Rational(1, 2), sympy.Rational(1, 2), 3],
        ]
    )
    text = structured(matrix, [[0, 1], [2]], [[0, 1], [2]], Registry())
    assert text == (
        "\\left[\\begin{array}{cc}\\tfrac{1}{4}I_{2} & \\tfrac{1}{2}\\mathbf{1}_{2} \\\\ "
        "\\tfrac{1}{2}\\mathbf{1}_{2}^\\top & 3\\end{array}\\right]"
    )


def test_words():
    assert ranges([0, 1, 2, 5]) == "1--3 and 6" and ranges([3]) == "4" and ranges([0, 1]) == "1 and 2"
    assert join(["a", "b", "c"]) == "a, b and c" and plural(1, "output") == "1 output"
    assert plural(3, "non-zero entry", "non-zero entries") == "3 non-zero entries"
    message = "pathway 'contexts-1-2': class 0 of group ['common', 'x'] drives it outside its own singular vectors"
    assert in_words(message, {"common": 1, "x": 3, "contexts-1-2": 2}) == (
        "the modes of class 1 of pathways 1 and 3 drive pathway 2 outside its own singular vectors"
    )
    assert in_words("pathway 'a' is coupled unlike the rest of its group") == (
        "pathway \\textsf{a} is coupled unlike the rest of its group"
    )
    assert in_words("pathway 'a' mode 2: Sigma_yx and Sigma_x differ", {"a": 4}) == (
        "pathway 4 mode 3: $\\Sigma^{yx}$ and $\\Sigma^{x}$ differ"
    )


def test_long_sums_break_at_top_level_signs():
    tex = " + ".join(f"\\frac{{b_{{{i}}}^{{2}}}}{{16}} - \\left(a + b\\right) b_{{{i}}}" for i in range(12))
    lines = split_sum("L = " + tex)
    assert len(lines) > 1 and all(width(line) <= 90 for line in lines)
    assert all(line.count("\\left") == line.count("\\right") for line in lines)


def test_deep_pathway_with_algebraic_values(tmp_path):
    """A depth-3 pathway whose singular values have no radical form and whose modes miss
    Assumption 2.1.1: the values are numbered roots (never SymPy's
    CRootOf), and the system is the reduced flow on the pathway's chain of three layers."""
    from gdln.derive.spec import context_task, task_from_dict

    document = context_task(4, 3, ["hierarchy", "chain", "clusters"], "context-subsets")
    document["network"] = [{"name": "deep", "pathway": [{"name": "deep", "hidden_layers": 2}]}]
    derivation = NetworkDerivation(task_from_dict(document), "deep")
    tex = to_latex(derivation, document=True)
    assert_reads_as_a_derivation(tex)
    assert "CRootOf" not in tex and "\\sqrt{z_{1,1}} \\approx" in tex and "P_{1}(z) = " in tex
    # Assumption 2.1.1 fails: the system is the reduced flow the race integrates, a chain of 3 layers
    assert "(Assumption 2.1.1 fails), so the system is the reduced flow" in tex
    assert "\\tau \\dot W_{1,1} = (W_{1,3} W_{1,2})^\\top G_{1}" in tex
    assert "\\tau \\dot W_{1,2} = W_{1,3}^\\top G_{1} W_{1,1}^\\top" in tex
    assert "\\tau \\dot W_{1,3} = G_{1} (W_{1,2} W_{1,1})^\\top" in tex
    path = tmp_path / "deep.tex"
    path.write_text(tex)
    pages, overfull = pdflatex(path)
    assert not overfull, overfull


def test_derive_staged_flag_writes_the_staged_derivation(capsys, tmp_path):
    path = tmp_path / "staged.tex"
    assert main(["derive", str(K3_SPEC), "--network", "common+2", "--staged", "--latex", str(path)]) == 0
    assert path.read_text() == to_latex(StagedDerivation(load_spec(K3_SPEC), "common+2"), document=True)
