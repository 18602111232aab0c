"""Draws SEACells metacells over a 2-D view of the cells, as an SVG (no plotting library).

    python examples/python/metacells_svg.py [OUT.svg]

Fits 30 metacells to the repository's pbmc68k_reduced (700 cells, 50 PCA dimensions) with
`sparrow.seacells`, then draws each cell on the first two principal components, coloured by
its metacell, each metacell's archetype cell as a ringed dot, and lines from every cell to
its archetype. The labels beside the plot are the cell types that dominate each metacell.
"""

import colorsys
import pathlib
import sys
from collections import Counter

import numpy as np

import sparrow

root = pathlib.Path(__file__).resolve().parents[2]
data = root / "data" / "pbmc68k_reduced"
out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).with_name("pbmc68k_metacells.svg")

x = np.load(data / "X_pca.npy")
labels = (data / "labels.txt").read_text().split("\n")[: len(x)]
res = sparrow.seacells(x, 30, device="cpu", labels=labels)
a, arche = res.assignments, res.archetypes

xy = x[:, :2].astype(float)
lo, hi = xy.min(0), xy.max(0)
W, H, pad = 640, 560, 30


def at(p):
    u = (p - lo) / (hi - lo)
    return pad + u[0] * (W - 2 * pad), H - pad - u[1] * (H - 2 * pad)


def colour(m):
    r, g, b = colorsys.hls_to_rgb((m * 0.618034) % 1.0, 0.5, 0.65)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W + 330}" height="{H}" font-family="sans-serif" font-size="11">',
         f'<rect width="{W + 330}" height="{H}" fill="white"/>',
         f'<text x="{pad}" y="18" font-size="13">pbmc68k_reduced: 700 cells, 30 SEACells metacells (sparrow {sparrow.__version__}); '
         f'PC1 x PC2; mean purity {res.summary["purity_mean"]:.2f}</text>']
for i in range(len(x)):
    (x0, y0), (x1, y1) = at(xy[i]), at(xy[arche[a[i]]])
    parts.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="{colour(a[i])}" stroke-opacity="0.25"/>')
for i in range(len(x)):
    cx, cy = at(xy[i])
    parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="2.6" fill="{colour(a[i])}"/>')
for m, c in enumerate(arche):
    cx, cy = at(xy[c])
    parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{colour(m)}" stroke="black" stroke-width="1.5"/>')
for m in range(len(arche)):
    members = [labels[i] for i in np.flatnonzero(a == m)]
    top, count = Counter(members).most_common(1)[0] if members else ("(empty)", 0)
    y = 40 + m * 17
    parts.append(f'<circle cx="{W + 12}" cy="{y - 4}" r="5" fill="{colour(m)}" stroke="black"/>')
    parts.append(f'<text x="{W + 22}" y="{y}">{m}: {len(members)} cells, {count} {top}</text>')
parts.append("</svg>")
out.write_text("\n".join(parts) + "\n")
print(f"wrote {out}: {res}")
