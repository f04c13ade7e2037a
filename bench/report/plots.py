# SPDX-License-Identifier: Apache-2.0
"""The plot layer every section shares: matplotlib without a display, and
one way to save a figure."""
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401  (the sections draw with plots.plt)


def save(fig, path, dpi=100):
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
