import json
import signal
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

import sparrow

anndata = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def pbmc(root):
    """The repository's pbmc68k_reduced as an AnnData: X_pca, obs_names, bulk_labels."""
    d = root / "data" / "pbmc68k_reduced"
    x = np.load(d / "X_pca.npy")
    cells = (d / "cells.txt").read_text().split("\n")[: x.shape[0]]
    labels = (d / "labels.txt").read_text().split("\n")[: x.shape[0]]
    ad = anndata.AnnData(obs=pd.DataFrame({"bulk_labels": labels}, index=cells))
    ad.obsm["X_pca"] = x
    return ad


@pytest.fixture(scope="module")
def cli_fit(cli, root, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "fit"
    d = root / "data" / "pbmc68k_reduced"
    subprocess.run([cli, "seacells", "--embedding", str(d / "X_pca.npy"), "--n-metacells", "20",
                    "--labels", str(d / "labels.txt"), "--out-dir", str(out), "--device", "cpu"],
                   check=True, capture_output=True)
    return out


def test_seacells_on_anndata_equals_the_cli(pbmc, cli_fit):
    ad = pbmc.copy()
    res = sparrow.seacells(ad, 20, labels="bulk_labels", device="cpu")
    np.testing.assert_array_equal(res.assignments, np.load(cli_fit / "assignments.npy"))
    np.testing.assert_array_equal(res.archetypes, np.load(cli_fit / "archetypes.npy"))
    soft = sp.load_npz(cli_fit / "soft.npz")
    assert (abs(res.soft - soft)).max() == 0
    summary = json.loads((cli_fit / "summary.json").read_text())
    timed = {"seconds", "seconds_total", "b_update_seconds", "fit_seconds_by_part"}
    assert {k: v for k, v in res.summary.items() if k not in timed} == \
        {k: v for k, v in summary.items() if k not in timed}
    assert res.rss == summary["rss"] and res.iterations == summary["iterations"]
    assert res.summary["purity_mean"] > 0.5
    # What the AnnData gains, as SEACells writes it.
    names = np.asarray(ad.obs_names)
    col = ad.obs["SEACell"]
    assert isinstance(col.dtype, pd.CategoricalDtype)
    np.testing.assert_array_equal(np.asarray(col, dtype=object), names[res.archetypes[res.assignments]])
    assert sp.issparse(ad.obsm["SEACell_soft"]) and ad.obsm["SEACell_soft"].shape == (700, 20)
    np.testing.assert_allclose(np.asarray(ad.obsm["SEACell_soft"].sum(axis=1)).ravel(), 1.0)


def test_seacells_on_an_array_and_its_float64_copy_agree(pbmc):
    x = pbmc.obsm["X_pca"]
    a = sparrow.seacells(x, 15, device="cpu", max_iter=12)
    b = sparrow.seacells(x.astype(np.float64), 15, device="cpu", max_iter=12)
    np.testing.assert_array_equal(a.assignments, b.assignments)
    assert a.rss == b.rss and 10 <= a.iterations <= 12


def test_summarize_hard_equals_a_pandas_groupby(pbmc):
    ad = pbmc.copy()
    rng = np.random.default_rng(0)
    counts = sp.random(700, 30, density=0.2, format="csr", random_state=1) * 10
    ad = anndata.AnnData(X=counts, obs=ad.obs.copy(), obsm=dict(ad.obsm))
    ad.layers["raw"] = counts.multiply(2).tocsr()
    sparrow.seacells(ad, 12, device="cpu", max_iter=10)
    mc = sparrow.summarize_by_metacell(ad)
    want = pd.DataFrame(counts.toarray()).groupby(np.asarray(ad.obs["SEACell"], dtype=object)).sum()
    assert mc.shape == (12, 30)
    got = pd.DataFrame(mc.X.toarray(), index=mc.obs_names)
    pd.testing.assert_frame_equal(got.loc[want.index], want, check_names=False, check_column_type=False)
    raw = sparrow.summarize_by_metacell(ad, layer="raw")
    np.testing.assert_allclose(raw.X.toarray(), 2 * mc.X.toarray())
    # Without a layer of that name, "raw" reads adata.raw (with its own var), as SEACells does.
    bare = ad.copy()
    del bare.layers["raw"]
    bare.raw = anndata.AnnData(X=counts.multiply(3).tocsr(), obs=bare.obs.copy())
    np.testing.assert_allclose(sparrow.summarize_by_metacell(bare, layer="raw").X.toarray(), 3 * mc.X.toarray())
    soft = sparrow.summarize_by_metacell(ad, soft=True)
    # Soft means: each cell's weights under 0.05 dropped and renormalised, then weighted means.
    W = ad.obsm["SEACell_soft"].toarray()
    W[W < 0.05] = 0
    W /= W.sum(axis=1, keepdims=True)
    want_soft = (W.T @ counts.toarray()) / W.sum(axis=0)[:, None]
    np.testing.assert_allclose(soft.X.toarray(), want_soft, rtol=1e-12, atol=1e-12)
    del rng


def test_seacells_bad_arguments(pbmc):
    x = pbmc.obsm["X_pca"]
    cases = [
        (lambda: sparrow.seacells(x, 0, device="cpu"), "`n_metacells`"),
        (lambda: sparrow.seacells(x, 701, device="cpu"), "`n_metacells`"),
        (lambda: sparrow.seacells(x, 10, n_neighbors=1, device="cpu"), "`n_neighbors`"),
        (lambda: sparrow.seacells(x, 10, graph="knn", device="cpu"), "`graph`"),
        (lambda: sparrow.seacells(x, 10, min_iter=20, max_iter=10, device="cpu"), "`min_iter`"),
        (lambda: sparrow.seacells(x[:, 0], 10, device="cpu"), "`data`"),
        (lambda: sparrow.seacells(pbmc, 10, use_rep="X_umap", device="cpu"), "`use_rep`"),
        (lambda: sparrow.seacells(x, 10, labels=["a"], device="cpu"), "`labels`"),
        (lambda: sparrow.summarize_by_metacell(pbmc, key="nope"), "`key`"),
        (lambda: sparrow.seacells(x, 10, seed=2**64, device="cpu"), "`seed`"),
        (lambda: sparrow.seacells(np.ones((0, 5)), 1, device="cpu"), "`data`"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=name):
            call()
    bad = x.copy()
    bad[3, 4] = np.nan
    with pytest.raises(ValueError, match="`data`"):
        sparrow.seacells(bad, 10, device="cpu")


def test_ctrl_c_stops_the_fit_between_iterations(pbmc):
    seen = []

    def progress(it, rss):
        seen.append(it)
        if it == 2:
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        sparrow.seacells(pbmc.obsm["X_pca"], 10, device="cpu", epsilon=0.0, max_iter=50, progress=progress)
    assert seen == [1, 2]


def test_an_exception_in_progress_stops_the_fit(pbmc):
    def progress(it, rss):
        if it == 3:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        sparrow.seacells(pbmc.obsm["X_pca"], 10, device="cpu", epsilon=0.0, max_iter=50, progress=progress)
