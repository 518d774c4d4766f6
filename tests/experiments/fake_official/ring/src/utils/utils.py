"""A fake `src/utils/utils.py` (the harness's tests): `l2_normalize`. Not the official code."""


def l2_normalize(x, dim=1):
    return x / x.norm(dim=dim, keepdim=True)
