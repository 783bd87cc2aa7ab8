"""The notebooks, executed headless by a real kernel (nbclient), outputs parsed."""

import os
import xml.etree.ElementTree as ET

import nbformat
from nbclient import NotebookClient

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOKS = os.path.join(os.path.dirname(HERE), "notebooks")


def run(name, tmp_path):
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "commit without outputs"
    client = NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


def outputs(nb, mime):
    return [o["data"][mime] for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if mime in o.get("data", {})]


def pictures(nb):
    """The static SVG each graph display carries for viewers that run no script: an <img> in
    its text/html (the display stores the graph once; issue 23)."""
    import base64
    import re

    found = []
    for html in outputs(nb, "text/html"):
        for src in re.findall(r'class="cv-picture" alt="[^"]*" src="data:image/svg\+xml;base64,'
                              r'([^"]+)"', html):
            found.append(base64.b64decode(src).decode("utf-8"))
    return found


def streams(nb):
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs if o["output_type"] == "stream")


def test_quickstart(tmp_path):
    nb = run("quickstart.ipynb", tmp_path)
    svgs = [ET.fromstring(s) for s in pictures(nb) + outputs(nb, "image/svg+xml")]
    assert len(svgs) >= 3  # the graph, the collapsed graph, the live view's final static output
    text = streams(nb)
    assert "numpy True" in text
    assert "[('seed', " in text
    final = svgs[-1]
    ids = {g.get("id") for g in final.iter("{http://www.w3.org/2000/svg}g")}
    assert any(i and i.startswith("n") for i in ids)
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    html_models = [m for m in state.values() if m["model_name"] == "HTMLModel"]
    assert any("1 violations" in m["state"]["value"] for m in html_models)
    streamed = [o["data"] for m in state.values() if m["model_name"] == "OutputModel"
                for o in m["state"]["outputs"]]
    assert any("<svg" in d["image/svg+xml"] and 'class="capviz-view"' in d["text/html"]
               for d in streamed), "the live widget showed the interactive view"
    assert not outputs(nb, "application/vnd.jupyter.widget-view+json"), \
        "the widget's output was replaced by the final view: the final state shows once"
    from capviz.render.view import read_data

    final = [h for h in outputs(nb, "text/html") if 'class="capviz-view"' in h
             and read_data(h)["title"] == "capviz done"]
    assert len(final) == 1


def test_seed_violations(tmp_path):
    nb = run("seed_violations.ipynb", tmp_path)
    text = streams(nb)
    assert "seeding is not supported during graph capture: np.random.seed(42)" in text
    assert "reported at" in text and "in init_linear" in text
    assert "violations: []" in text
    assert "[('seed', 'np.random.seed(1)'), ('seed', 'random.seed(2)')]" in text
    assert "fix 1 exact: True" in text
    assert "fix 2 violations: []" in text
    assert "fix 3 inputs: ['x', 'w'] True" in text
    svgs = [ET.fromstring(s) for s in pictures(nb) + outputs(nb, "image/svg+xml")]
    assert any(g.get("class") == "node capviz-violation"
               for svg in svgs for g in svg.iter("{http://www.w3.org/2000/svg}g"))


def test_debugging(tmp_path):
    nb = run("debugging.ipynb", tmp_path)
    text = streams(nb)
    assert "stopped after <Node %2 op log> value:" in text
    assert "first non-finite value at node %2 (log, 1 of 4 elements NaN/Inf)" in text
    assert "fed by:" in text
    assert "differs: max abs error" in text
    assert "nan 0" in text and "replayed on numpy" in text
    svg = ET.fromstring((pictures(nb) + outputs(nb, "image/svg+xml"))[0])
    marked = [g for g in svg.iter("{http://www.w3.org/2000/svg}g") if g.get("id") == "n2"]
    assert any(e.get("stroke") == "#dc2626" for e in marked[0].iter())
