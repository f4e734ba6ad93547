"""Figures of the command line and the demos (matplotlib, imported on use)."""

import os


def save_figure(fig, axes, path):
    """Grid on every axis, tight layout, write ``path`` (creating its folder), close."""
    import matplotlib.pyplot as plt

    for a in axes:
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
