"""Mining against an independent dense numpy implementation of every formula (small random data)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from lem import mine as mining
from lem.cli import command
from lem.mine import MineSettings, exact
from lem.mine import margin as margin_mod

# ---------------------------------------------------------------- the dense reference (written from the formulas)


def ref_topk(row: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, ties to the lowest index."""
    return np.lexsort((np.arange(len(row)), -row))[:k]


def ref_scores(x, y, k, margin, neighbourhood):
    s = (x.astype(np.float32) @ y.astype(np.float32).T).astype(np.float64)
    nx, ny = s.shape
    kx, ky = min(k, ny), min(k, nx)
    nx_vals = [s[a, ref_topk(s[a], kx)] for a in range(nx)]
    ny_vals = [s[ref_topk(s[:, b], ky), b] for b in range(ny)]
    denom = np.zeros_like(s)
    for a, b in itertools.product(range(nx), range(ny)):
        if neighbourhood == "mean":  # LASER: (mean_k(x) + mean_k(y)) / 2
            denom[a, b] = (nx_vals[a].mean() + ny_vals[b].mean()) / 2
        else:  # authors: (|N_a| + |N_b|) * cos / (sum N_a + sum N_b)
            denom[a, b] = (nx_vals[a].sum() + ny_vals[b].sum()) / (len(nx_vals[a]) + len(ny_vals[b]))
    if margin == "ratio":
        m = s / denom
    elif margin == "distance":
        m = s - denom
    else:
        m = s.copy()
    return s, m


def ref_tolerance(s: np.ndarray, m: np.ndarray, margin: str) -> np.ndarray:
    """How far a float32 implementation may be from the reference's margin: 1e-5 relative, 1e-6 absolute,
    and for the ratio margin the error of a float32 denominator d = s / m amplified by 1 / |d| (random
    vectors with k >= the document's size have mean neighbourhoods near zero: margins in the thousands,
    whose last digits depend on the CPU's summation order)."""
    tol = 1e-5 * np.abs(m) + 1e-6
    if margin == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where(m != 0, np.abs(s / np.where(m != 0, m, 1)), np.inf)
            tol += np.where(np.isfinite(d) & (d > 0), 2e-6 * (1 + np.abs(m)) / d, 0)
    return tol


def ref_mine(x, y, st: MineSettings):
    """Every retrieval of the reference: (source, target, margin, tolerance) per pair."""
    s, m = ref_scores(x, y, st.k, st.margin, st.neighbourhood)
    tol = ref_tolerance(s, m, st.margin)
    nx, ny = s.shape
    nc = st.n_candidates
    fwd, bwd = [], []
    for a in range(nx):
        cand = range(ny) if st.candidates == "all" else ref_topk(s[a], min(nc, ny))
        best = min(cand, key=lambda b: (-m[a, b], b))
        fwd.append((a, int(best), m[a, best], tol[a, best]))
    for b in range(ny):
        cand = range(nx) if st.candidates == "all" else ref_topk(s[:, b], min(nc, nx))
        best = min(cand, key=lambda a: (-m[a, b], a))
        bwd.append((int(best), b, m[best, b], tol[best, b]))
    ok = (lambda v: True) if st.threshold is None else (lambda v: v > st.threshold)
    out = {
        "forward": [p for p in fwd if ok(p[2])],
        "backward": sorted(p for p in bwd if ok(p[2])),
        "intersection": [p for p in fwd if ok(p[2]) and bwd[p[1]][0] == p[0]],
    }
    pool = sorted(fwd + bwd, key=lambda p: -p[2])  # stable: forward entries first on equal scores
    used_s, used_t, mx = set(), set(), []
    for a, b, v, t in pool:
        if a in used_s or b in used_t:
            continue
        used_s.add(a)
        used_t.add(b)
        if ok(v):
            mx.append((a, b, v, t))
    out["max"] = sorted(mx)
    return out


def assert_same(got, want):
    assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, *_ in want]
    diff = np.abs(np.array([v for *_, v in got], dtype=float) - [w[2] for w in want])
    tol = np.array([w[3] for w in want], dtype=float)
    assert (diff <= tol).all(), [(w[:2], got[i][2], w[2]) for i, w in enumerate(want) if diff[i] > tol[i]]


def unit(rng, n, d=16):
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def tied(rng, n, d=8):
    """Positive dyadic vectors with many exact duplicates: every product and sum is exact, so ties are exact."""
    base = rng.integers(1, 5, size=(max(2, n // 3), d)).astype(np.float32) / 4
    return base[rng.integers(0, len(base), size=n)]


SHAPES = [(30, 40), (3, 7), (7, 3), (2, 3), (1, 5), (5, 1)]  # the small ones: documents shorter than k


# ---------------------------------------------------------------- neighbours


@pytest.mark.parametrize("data", ["random", "tied"])
@pytest.mark.parametrize("shape", SHAPES + [(50, 9)])
@pytest.mark.parametrize("k", [1, 4, 12])
@pytest.mark.parametrize("block", [1, 4, 1024])
def test_knn_both_equals_dense_topk(data, shape, k, block):
    rng = np.random.default_rng([len(data), *shape, k])
    make = unit if data == "random" else tied
    x, y = make(rng, shape[0]), make(rng, shape[1])
    fwd, bwd = mining.knn_both(x, y, k, k, block_size=block)
    s = x @ y.T
    for a in range(len(x)):
        want = ref_topk(s[a], min(k, len(y)))
        assert fwd.idx[a].tolist() == want.tolist()
        np.testing.assert_allclose(fwd.sims[a], s[a, want], rtol=1e-5, atol=1e-6)
    for b in range(len(y)):
        want = ref_topk(s[:, b], min(k, len(x)))
        assert bwd.idx[b].tolist() == want.tolist()
        np.testing.assert_allclose(bwd.sims[b], s[want, b], rtol=1e-5, atol=1e-6)


def test_knn_both_large_block_uses_bounds_correctly():
    # wide enough that the group bound (k groups of up to 2048 columns) is a real filter
    rng = np.random.default_rng(3)
    x, y = unit(rng, 300, 8), unit(rng, 9000, 8)
    fwd, bwd = mining.knn_both(x, y, 5, 3, block_size=128)
    s = x @ y.T
    assert (fwd.idx == np.argsort(-s, axis=1, kind="stable")[:, :5]).all()
    assert (bwd.idx == np.argsort(-s.T, axis=1, kind="stable")[:, :3]).all()


@pytest.mark.parametrize("data", ["random", "tied"])
@pytest.mark.parametrize("shape", SHAPES + [(50, 9), (300, 700)])
@pytest.mark.parametrize("k", [1, 4, 12])
@pytest.mark.parametrize("block", [1, 4, 1024])
def test_knn_torch_on_cpu_equals_numpy_engine(data, shape, k, block):
    """The GPU engine (mining.settings.device: cuda), run by torch on the CPU: the numpy engine's neighbours
    (exact ties included), similarities up to float32 rounding."""
    rng = np.random.default_rng([len(data), *shape, k, 1])
    make = unit if data == "random" else tied
    x, y = make(rng, shape[0]), make(rng, shape[1])
    want = mining.knn_both(x, y, k, k, block_size=block)
    got = mining.knn_torch(x, y, k, k, block_size=block, device="cpu")
    for a, b in zip(got, want, strict=True):
        assert (a.idx == b.idx).all()
        np.testing.assert_allclose(a.sims, b.sims, rtol=1e-6, atol=1e-6)


def test_mining_and_curation_scores_through_the_gpu_path_equal_the_cpu_path(monkeypatch):
    """`device: cuda` through mine() and pair_margin_scores(), torch on the CPU standing in for the GPU:
    the same pairs and scores as `device: cpu` (numpy)."""
    import torch

    from lem.mine import knn as knn_mod

    monkeypatch.setattr(knn_mod, "torch_device", lambda device: torch.device("cpu"))
    rng = np.random.default_rng(11)
    x = unit(rng, 2600, 32)
    y = x[:2500] + 0.7 * unit(rng, 2500, 32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    for cand in ("all", "knn"):
        cpu = MineSettings(
            candidates=cand, block_size=512, retrieval=("forward", "backward", "intersection", "max")
        )
        gpu = MineSettings(**{**cpu.to_dict(), "retrieval": cpu.retrieval, "device": "cuda"})
        a, b = mining.mine(x, y, cpu), mining.mine(x, y, gpu)
        for r in cpu.retrieval:
            got, want = mining.retrieve(b, r), mining.retrieve(a, r)
            assert [p[:2] for p in got] == [p[:2] for p in want]
            np.testing.assert_allclose([p[2] for p in got], [p[2] for p in want], rtol=1e-6)
    want = mining.pair_margin_scores(x[:2500], y, 4, "ratio", "pooled", block_size=512)
    got = mining.pair_margin_scores(x[:2500], y, 4, "ratio", "pooled", block_size=512, device="cuda")
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert (np.argsort(-got, kind="stable") == np.argsort(-want, kind="stable")).all()


def test_device_cuda_without_cuda_fails_naming_the_key():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible")
    rng = np.random.default_rng(12)
    x = unit(rng, 10)
    with pytest.raises(RuntimeError, match="mining.settings.device is cuda"):
        mining.mine(x, x, MineSettings(device="cuda"))
    auto = mining.mine(x, x, MineSettings(device="auto"))  # no GPU: the numpy engine
    assert (auto.fwd_best == mining.mine(x, x, MineSettings()).fwd_best).all()
    with pytest.raises(ValueError, match="device"):
        MineSettings.from_dict({"device": "gpu"})


# ---------------------------------------------------------------- mining, every option


OPTIONS = list(
    itertools.product(
        mining.MARGINS, mining.NEIGHBOURHOODS, [("all", None), ("knn", None), ("knn", 2), ("knn", 9)]
    )
)


@pytest.mark.parametrize("margin,neighbourhood,cand", OPTIONS)
@pytest.mark.parametrize("data", ["random", "tied"])
def test_mine_equals_reference_for_every_option(margin, neighbourhood, cand, data):
    rng = np.random.default_rng(7)
    make = unit if data == "random" else tied
    for shape, k, thr in itertools.product(SHAPES, [1, 4, 50], [None, 0.5]):
        x, y = make(rng, shape[0]), make(rng, shape[1])
        st = MineSettings(
            margin=margin, neighbourhood=neighbourhood, k=k, candidates=cand[0], candidate_k=cand[1],
            retrieval=("forward", "backward", "intersection", "max"), threshold=thr, block_size=4,
        )  # fmt: skip
        best = mining.mine(x, y, st)
        want = ref_mine(x, y, st)
        for r in st.retrieval:
            assert_same(mining.retrieve(best, r, thr), want[r])


@pytest.mark.parametrize("kind", mining.MARGINS)
@pytest.mark.parametrize("data", ["random", "tied"])
@pytest.mark.parametrize("block,chunk_rows", [(1, 1), (4, 1), (4, 3), (7, 2), (1024, 5), (1024, 1000)])
def test_best_over_all_in_blocks_and_chunks_equals_dense(monkeypatch, kind, data, block, chunk_rows):
    # the all-candidates pass scores each block of rows in chunks (reused buffers); any split gives the
    # dense result: first maximum of every row, first maximum of every column, same float64 scores
    rng = np.random.default_rng([len(data), block, chunk_rows])
    make = unit if data == "random" else tied
    x, y = make(rng, 37), make(rng, 23)
    fwd, bwd = mining.knn_both(x, y, 4)
    dx, dy = mining.neighbourhood_terms(fwd, bwd, 4, "pooled")
    monkeypatch.setattr(exact, "_SCORE_CHUNK", 8 * len(y) * chunk_rows)
    got = mining.best_over_all(x, y, dx, dy, kind, block)
    m = margin_mod.margin((x @ y.T).astype(np.float64), dx[:, None] + dy[None, :], kind)
    assert got.fwd_best.tolist() == m.argmax(axis=1).tolist()
    assert got.bwd_best.tolist() == m.argmax(axis=0).tolist()
    if data == "tied":  # exact arithmetic, and many exact ties
        assert len(np.unique(x, axis=0)) < len(x) and len(np.unique(y, axis=0)) < len(y)
        assert (got.fwd_score == m.max(axis=1)).all() and (got.bwd_score == m.max(axis=0)).all()
    else:  # a one-row block's matmul may round differently from the whole matrix's
        np.testing.assert_allclose(got.fwd_score, m.max(axis=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got.bwd_score, m.max(axis=0), rtol=1e-5, atol=1e-6)
    assert got.fwd_score.dtype == got.bwd_score.dtype == np.float64


@pytest.mark.parametrize(
    "margin,neighbourhood", list(itertools.product(mining.MARGINS, mining.NEIGHBOURHOODS))
)
@pytest.mark.parametrize("data", ["random", "tied"])
def test_all_candidates_settled_from_neighbours_equal_reference(monkeypatch, margin, neighbourhood, data):
    # large problems settle most sources/targets from their k nearest neighbours (a bound on every other
    # candidate's margin) and rescore only the rest; forced here on small ones, against the dense reference
    monkeypatch.setattr(exact, "_SETTLE_MIN", 1)
    monkeypatch.setattr(exact, "_PAD", 1)  # so that the partial passes run on small problems too
    rng = np.random.default_rng(11)
    make = (lambda r, n: unit(r, n, 16)) if data == "random" else (lambda r, n: tied(r, n, 16))
    for shape, k in itertools.product(SHAPES + [(60, 45), (45, 60)], [1, 2, 4]):
        x, y = make(rng, shape[0]), make(rng, shape[1])
        st = MineSettings(
            margin=margin, neighbourhood=neighbourhood, k=k, block_size=512,
            retrieval=("forward", "backward", "intersection", "max"),
        )  # fmt: skip
        best, want = mining.mine(x, y, st), ref_mine(x, y, st)
        for r in st.retrieval:
            assert_same(mining.retrieve(best, r), want[r])


@pytest.mark.parametrize("kind", mining.MARGINS)
def test_best_over_all_settled_equals_whole_second_pass(kind):
    # big enough for the settled path (and 2049 rows: a one-row last block of the first pass)
    rng = np.random.default_rng(5)
    hubs = rng.standard_normal((8, 32)).astype(np.float32)
    z = rng.standard_normal((2100, 32)).astype(np.float32)
    pulled = rng.random(2100) < 0.3
    z[pulled] += 1.5 * hubs[rng.integers(0, 8, pulled.sum())]
    x = z[:2049] / np.linalg.norm(z[:2049], axis=1, keepdims=True)
    y = z[rng.permutation(2100)] + 0.3 * rng.standard_normal((2100, 32)).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    x[-1] = y[7] = hubs[0] / np.linalg.norm(hubs[0])  # the lone row: unsettled, and target 7's best
    fwd, bwd = mining.knn_both(x, y, 4)
    dx, dy = mining.neighbourhood_terms(fwd, bwd, 4, "pooled")
    near_r = margin_mod._best_of_candidates(fwd, fwd.idx.shape[1], dx, dy, kind)[0]
    near_c = margin_mod._best_of_candidates(bwd, bwd.idx.shape[1], dy, dx, kind)[0]
    rows = exact._settled(fwd, near_r, dx, dy, kind, len(y), exact._product_slack(x, y))
    cols = exact._settled(bwd, near_c, dy, dx, kind, len(x), exact._product_slack(y, x))
    got = mining.best_over_all(x, y, dx, dy, kind, 1024, fwd, bwd)
    whole = mining.best_over_all(x, y, dx, dy, kind, 1024)
    assert 0.7 < rows.mean() <= 1 and 0.7 < cols.mean() <= 1
    if kind != "absolute":  # absolute settles all: the best cosine is the first neighbour
        assert rows.mean() < 0.9 and not rows[-1] and not cols[7] and whole.bwd_best[7] == len(x) - 1
    # the same choices; the scores of the rows rescored alone may differ in the last bits (a BLAS kernel
    # may sum a few rows in another order than a whole block: it does on some CPUs)
    assert (
        got.fwd_best.tolist() == whole.fwd_best.tolist() and got.bwd_best.tolist() == whole.bwd_best.tolist()
    )
    np.testing.assert_allclose(got.fwd_score, whole.fwd_score, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got.bwd_score, whole.bwd_score, rtol=1e-6, atol=1e-7)


def test_pooled_and_mean_differ_only_in_short_documents():
    rng = np.random.default_rng(2)
    x, y = unit(rng, 10), unit(rng, 12)
    a = mining.pair_margin_scores(x, y[:10], 4, "ratio", "mean")
    b = mining.pair_margin_scores(x, y[:10], 4, "ratio", "pooled")
    np.testing.assert_allclose(a, b)
    short = mining.mine(x[:3], y, MineSettings(neighbourhood="mean"))
    short_p = mining.mine(x[:3], y, MineSettings(neighbourhood="pooled"))
    assert not np.allclose(short.fwd_score, short_p.fwd_score)


@pytest.mark.parametrize("neighbourhood", mining.NEIGHBOURHOODS)
@pytest.mark.parametrize("margin", mining.MARGINS)
def test_pair_margin_scores_equal_reference(margin, neighbourhood):
    rng = np.random.default_rng(4)
    for n in (2, 3, 20):
        x, y = unit(rng, n), unit(rng, n)
        _, m = ref_scores(x, y, 4, margin, neighbourhood)
        got = mining.pair_margin_scores(x, y, 4, margin, neighbourhood, block_size=3)
        np.testing.assert_allclose(got, np.diag(m), rtol=1e-5, atol=1e-6)


def test_xsim_error_rate_equals_reference():
    rng = np.random.default_rng(5)
    x = unit(rng, 40)
    y = x + 0.6 * unit(rng, 40)
    for margin in mining.MARGINS:
        _, m = ref_scores(x, y, 4, margin, "mean")
        want = float(np.mean(m.argmax(axis=1) != np.arange(40)))
        assert mining.xsim_error_rate(x, y, margin=margin) == want
    assert mining.xsim_error_rate(x, x) == 0.0


def test_ivf_with_every_list_probed_equals_exact():
    rng = np.random.default_rng(6)
    x, y = unit(rng, 200, 32), unit(rng, 220, 32)
    exact = MineSettings(candidates="knn", margin="ratio", neighbourhood="mean")
    ivf = MineSettings(candidates="knn", margin="ratio", neighbourhood="mean", index="ivf", nlist=8, nprobe=8)
    a, b = mining.mine(x, y, exact), mining.mine(x, y, ivf)
    assert (a.fwd_best == b.fwd_best).all() and (a.bwd_best == b.bwd_best).all()
    np.testing.assert_allclose(a.fwd_score, b.fwd_score, rtol=1e-5)
    hnsw = mining.mine(x, y, MineSettings(candidates="knn", index="hnsw"))
    assert (hnsw.fwd_best == a.fwd_best).mean() > 0.9


def test_settings_reject_unknown_and_bad_values():
    with pytest.raises(ValueError, match="mining settings: unknown key"):
        MineSettings.from_dict({"kk": 3})
    with pytest.raises(ValueError, match="margin"):
        MineSettings.from_dict({"margin": "cosine"})
    with pytest.raises(ValueError, match="candidates='knn'"):
        MineSettings.from_dict({"index": "hnsw"})
    s = MineSettings.from_dict({"retrieval": "max", "candidates": "knn", "candidate_k": 8})
    assert s.retrieval == ("max",) and s.n_candidates == 8
    d = MineSettings().to_dict()
    assert (
        d["margin"] == "ratio" and d["neighbourhood"] == "pooled" and d["k"] == 4 and d["candidates"] == "all"
    )


def test_prf_on_deduplicated_pairs():
    gold = {("a", "x"), ("b", "y"), ("c", "z")}
    m = mining.prf({("a", "x"), ("b", "z")}, gold)
    assert m == {"precision": 0.5, "recall": 1 / 3, "f1": 0.4, "n_pred": 2, "n_gold": 3, "n_correct": 1}


# ---------------------------------------------------------------- the CLI, per-document


def write_tsv(path, header, rows):
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")


def mine_cli_metrics(tmp_path):
    """`lem mine run` on si.npy/si.tsv, en.npy/en.tsv and gold.tsv of `tmp_path` with default settings: its metrics."""
    args = [
        "--src-emb", str(tmp_path / "si.npy"), "--src-sents", str(tmp_path / "si.tsv"),
        "--tgt-emb", str(tmp_path / "en.npy"), "--tgt-sents", str(tmp_path / "en.tsv"),
        "--gold", str(tmp_path / "gold.tsv"), "--settings", "{}",
        "--out-pairs", str(tmp_path / "p.tsv"), "--out-metrics", str(tmp_path / "m.json"),
    ]  # fmt: skip
    assert command("mine")(["run", *args]) == 0
    return json.loads((tmp_path / "m.json").read_text())


def test_mine_cli_per_document(tmp_path):
    rng = np.random.default_rng(8)
    docs = {"d1": 5, "d2": 2, "d3": 6}  # d2 is shorter than k
    src_rows, tgt_rows, gold, xs, ys = [], [], [], [], []
    for d, n in docs.items():
        x = unit(rng, n, 32)
        y = x + 0.3 * unit(rng, n, 32)
        y = y[::-1]
        for i in range(n):
            src_rows.append((f"si_{d}_{i}", d, f"s {i}"))
            tgt_rows.append((f"en_{d}_{i}", d, f"t {i}"))
            gold.append((f"si_{d}_{i}", f"en_{d}_{n - 1 - i}"))
        xs.append(x)
        ys.append(y / np.linalg.norm(y, axis=1, keepdims=True))
    gold.append(gold[0])  # duplicated gold line: counted once
    write_tsv(tmp_path / "si.tsv", ["id", "doc", "text"], src_rows)
    write_tsv(tmp_path / "en.tsv", ["id", "doc", "text"], tgt_rows)
    write_tsv(tmp_path / "gold.tsv", ["src_id", "tgt_id"], gold)
    np.save(tmp_path / "si.npy", np.concatenate(xs).astype(np.float32))
    np.save(tmp_path / "en.npy", np.concatenate(ys).astype(np.float32))
    m = mine_cli_metrics(tmp_path)
    assert m["n_docs"] == 3 and m["n_src"] == 13 and m["n_tgt"] == 13
    for d in ("forward", "backward", "intersection"):
        assert m[d]["n_gold"] == 13 and m[d]["f1"] == 1.0
    assert m["settings"]["neighbourhood"] == "pooled"
    # where the values stand: chance well below the perfect score, the ceiling at it (one link per sentence)
    for d in ("forward", "backward", "intersection"):
        assert 0 < m["chance"][d]["f1"] < 0.5 and m["ceiling"][d]["f1"] == 1.0
    lines = (tmp_path / "p.tsv").read_text().splitlines()
    assert lines[0] == "direction\tsrc_id\ttgt_id\tscore" and len(lines) == 1 + 3 * 13
    # a cross-document pair never appears
    assert all(r.split("\t")[1].split("_")[1] == r.split("\t")[2].split("_")[1] for r in lines[1:])


def test_mine_cli_rejects_mismatched_embeddings(tmp_path, capsys):
    write_tsv(tmp_path / "s.tsv", ["id", "doc", "text"], [("a", "", "x"), ("b", "", "y")])
    write_tsv(tmp_path / "g.tsv", ["src_id", "tgt_id"], [("a", "b")])
    np.save(tmp_path / "e.npy", np.ones((3, 4), np.float32))
    args = ["--src-emb", str(tmp_path / "e.npy"), "--src-sents", str(tmp_path / "s.tsv"), "--tgt-emb",
            str(tmp_path / "e.npy"), "--tgt-sents", str(tmp_path / "s.tsv"), "--gold", str(tmp_path / "g.tsv"),
            "--out-pairs", str(tmp_path / "p.tsv"), "--out-metrics", str(tmp_path / "m.json")]  # fmt: skip
    assert command("mine")(["run", *args]) == 1
    assert "expected 2 rows" in capsys.readouterr().err


def test_mine_cli_one_document_resamples_its_sentences(tmp_path):
    """A retrieval set (lem.data.retrieval) is one document: its test items for the two-level test are its
    sentences, not the one document (which would leave the test set fixed)."""
    rng = np.random.default_rng(9)
    n = 6
    x = unit(rng, n, 32)
    y = x + 0.2 * unit(rng, n, 32)
    write_tsv(
        tmp_path / "si.tsv", ["id", "doc", "text"], [(f"si_all_{i}", "all", f"s {i}") for i in range(n)]
    )
    write_tsv(
        tmp_path / "en.tsv", ["id", "doc", "text"], [(f"en_all_{i}", "all", f"t {i}") for i in range(n)]
    )
    write_tsv(tmp_path / "gold.tsv", ["src_id", "tgt_id"], [(f"si_all_{i}", f"en_all_{i}") for i in range(n)])
    np.save(tmp_path / "si.npy", x.astype(np.float32))
    np.save(tmp_path / "en.npy", (y / np.linalg.norm(y, axis=1, keepdims=True)).astype(np.float32))
    m = mine_cli_metrics(tmp_path)
    assert m["n_docs"] == 1 and m["units"]["kind"] == "sentence"
    assert m["units"]["units"] == sorted(f"si_all_{i}" for i in range(n))
